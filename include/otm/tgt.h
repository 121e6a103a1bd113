/*
 * otm/tgt.h - libomptarget's plugin types, as its C ABI lays them out
 * (LLVM 14 and 16; docs/DESIGN.md §2): what this project's plugin serves
 * (src/plugin/abi.h) and what a worker calls in the plugins it proxies
 * (otm/proxy.h).
 */
#ifndef OTM_TGT_H
#define OTM_TGT_H

#include <stddef.h>
#include <stdint.h>

#define OFFLOAD_SUCCESS 0
#define OFFLOAD_FAIL (~0)

/* Kinds of data_alloc (LLVM 14 TargetAllocTy). */
enum {
    TARGET_ALLOC_DEVICE = 0,
    TARGET_ALLOC_HOST = 1,
    TARGET_ALLOC_SHARED = 2,
    TARGET_ALLOC_DEFAULT = 3
};

/* init_requires flags (OMP_REQ_*). */
#define OMP_REQ_UNIFIED_SHARED_MEMORY 0x008

/* An offload entry that is no code nor data: clang 19 carries the
 * program's `requires` flags in the host's table this way (no name, the
 * flags in its address), and libomptarget 19 wants one device entry for
 * each host entry. */
#define OMP_REGISTER_REQUIRES 0x10

typedef struct __tgt_offload_entry {
    void *addr;
    char *name;
    size_t size;
    int32_t flags;
    int32_t reserved;
} __tgt_offload_entry;

typedef struct __tgt_device_image {
    void *ImageStart;
    void *ImageEnd;
    __tgt_offload_entry *EntriesBegin;
    __tgt_offload_entry *EntriesEnd;
} __tgt_device_image;

typedef struct __tgt_bin_desc {
    int32_t NumDeviceImages;
    __tgt_device_image *DeviceImages;
    __tgt_offload_entry *HostEntriesBegin;
    __tgt_offload_entry *HostEntriesEnd;
} __tgt_bin_desc;

typedef struct __tgt_target_table {
    __tgt_offload_entry *EntriesBegin;
    __tgt_offload_entry *EntriesEnd;
} __tgt_target_table;

typedef struct __tgt_async_info {
    void *Queue;
} __tgt_async_info;

/* The kernel arguments of LLVM 16's __tgt_rtl_launch_kernel: KernelArgsTy
 * of openmp/libomptarget/include/omptarget.h on release/16.x, Version 2
 * (clang-16 emits it as { i32, i32, ptr x 6, i64, i64, [3 x i32],
 * [3 x i32], i32 }). Flags is 64 bits of which LLVM 16 defines none we use. */
typedef struct __tgt_kernel_arguments {
    uint32_t Version;       /* 2 in LLVM 16 */
    uint32_t NumArgs;       /* entries of the launch's args/offsets arrays */
    void **ArgBasePtrs;
    void **ArgPtrs;
    int64_t *ArgSizes;
    int64_t *ArgTypes;
    void **ArgNames;
    void **ArgMappers;
    uint64_t Tripcount;
    uint64_t Flags;
    uint32_t NumTeams[3];
    uint32_t ThreadLimit[3];
    uint32_t DynCGroupMem;
} __tgt_kernel_arguments;
_Static_assert(sizeof(__tgt_kernel_arguments) == 104, "LLVM 16 KernelArgsTy is 104 bytes");
_Static_assert(offsetof(__tgt_kernel_arguments, NumTeams) == 72, "LLVM 16 KernelArgsTy");

#endif
