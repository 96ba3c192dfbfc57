/* Links against an installed libclsearch and calls into it. */
#include <clsearch.h>
#include <stdio.h>

int main(void)
{
    cls_search_params p;
    cls_search_defaults(&p);
    printf("clsearch %s, default k %u, %s\n", cls_version(), p.k, cls_status_str(CLS_E_ARG));
    return p.k == 1000 ? 0 : 1;
}
