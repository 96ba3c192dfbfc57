/* libFuzzer target: the tuning file ($CLSEARCH_TUNING), read for a device named as the seeds
 * name theirs ("fuzz device", driver "1.0"), so that an entry's parameters are applied and
 * checked. */
#include <stdlib.h>
#include <string.h>

#include "device/clx.h"
#include "fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write(data, size, ".json");
    if (path) {
        cls_device_info info;
        memset(&info, 0, sizeof info);
        strcpy(info.name, "fuzz device");
        strcpy(info.driver_version, "1.0");
        strcpy(info.vendor, "fuzz");
        info.is_gpu = 1;
        info.global_mem = 1ull << 30;
        info.local_mem = 48 << 10;
        info.compute_units = 8;
        info.max_work_group = 1024;
        info.max_alloc = 1ull << 28;
        setenv("CLSEARCH_TUNING", path, 1);
        unsetenv("CLSEARCH_PARAMS");
        clx_params p;
        clx_params_for(&info, &p);
    }
    fz_clean();
    return 0;
}
