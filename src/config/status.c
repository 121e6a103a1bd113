/* status.c - names and sentences for otm_status values. */
#include "otm/status.h"

int otm_status_valid(int st)
{
    return st >= 0 && st < OTM_STATUS_COUNT;
}

const char *otm_status_text(int st)
{
    switch (st) {
#define OTM_STATUS_TEXT(name, value, text) case value: return text;
    OTM_STATUS_LIST(OTM_STATUS_TEXT)
#undef OTM_STATUS_TEXT
    default: return "unknown status";
    }
}

const char *otm_status_name(int st)
{
    switch (st) {
#define OTM_STATUS_NAME(name, value, text) case value: return #name;
    OTM_STATUS_LIST(OTM_STATUS_NAME)
#undef OTM_STATUS_NAME
    default: return "OTM_STATUS_UNKNOWN";
    }
}
