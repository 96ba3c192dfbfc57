/* Tuned kernel parameters: a small database keyed by device, with per-vendor and generic
 * fallbacks, as CLBlast keeps one. Entries are first match wins; every value is capped by the
 * device's maximum work-group size. `clsearch devices -v` and `-v` show what is in force and
 * which entry it came from. A measured tuning file (clsearch tune) will sit in front of this. */
#include <stdio.h>
#include <string.h>

#include "clx.h"

typedef struct entry {
    const char *vendor; /* substring of CL_DEVICE_VENDOR, NULL = any */
    int gpu;            /* 1 GPU, 0 CPU/other, -1 any */
    unsigned wg_intersect, wg_score, wg_topk;
    const char *label;
} entry;

static const entry db[] = {
    {"NVIDIA", 1, 256, 256, 512, "vendor default: NVIDIA GPU"},
    {"Advanced Micro Devices", 1, 256, 256, 256, "vendor default: AMD GPU"},
    {"AMD", 1, 256, 256, 256, "vendor default: AMD GPU"},
    {NULL, 1, 256, 256, 256, "generic default: GPU"},
    /* CPU devices run a work-group on one core: smaller groups, fewer barrier-bound steps. */
    {NULL, 0, 64, 64, 64, "generic default: CPU"},
};

static unsigned cap(unsigned v, size_t max)
{
    while (v > 1 && v > max) v >>= 1;
    return v;
}

void clx_params_for(const cls_device_info *info, clx_params *p)
{
    for (size_t i = 0; i < sizeof db / sizeof db[0]; i++) {
        const entry *e = &db[i];
        if (e->vendor && !strstr(info->vendor, e->vendor)) continue;
        if (e->gpu != -1 && e->gpu != info->is_gpu) continue;
        p->wg_intersect = cap(e->wg_intersect, info->max_work_group);
        p->wg_score = cap(e->wg_score, info->max_work_group);
        p->wg_topk = cap(e->wg_topk, info->max_work_group);
        snprintf(p->source, sizeof p->source, "%s", e->label);
        return;
    }
}

void cls_device_params(const cls_device_info *d, char *buf, size_t len)
{
    clx_params p;
    clx_params_for(d, &p);
    snprintf(buf, len, "BLOCK_SIZE=128 WG_INTERSECT=%u WG_SCORE=%u WG_TOPK=%u (%s)", p.wg_intersect, p.wg_score,
             p.wg_topk, p.source);
}
