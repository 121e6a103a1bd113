/*
 * abi.h - the libomptarget plugin interface we serve, declared from the
 * layouts of LLVM 14 and LLVM 16 (docs/DESIGN.md §2): stock libomptarget dlopens
 * the plugin and looks these functions up by name. Only __tgt_rtl_* leave
 * the plugin. Both sets are exported: libomptarget 14 requires
 * run_target_region and run_target_team_region and never looks up the
 * LLVM 16 names; libomptarget 16 requires launch_kernel and never looks up
 * run_target_*.
 */
#ifndef OTM_ABI_H
#define OTM_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "otm/tgt.h"

#define OTM_EXPORT __attribute__((visibility("default")))

OTM_EXPORT int32_t __tgt_rtl_is_valid_binary(__tgt_device_image *image);
OTM_EXPORT int32_t __tgt_rtl_number_of_devices(void);
OTM_EXPORT int64_t __tgt_rtl_init_requires(int64_t flags);
OTM_EXPORT int32_t __tgt_rtl_init_device(int32_t id);
OTM_EXPORT __tgt_target_table *__tgt_rtl_load_binary(int32_t id, __tgt_device_image *image);
OTM_EXPORT void *__tgt_rtl_data_alloc(int32_t id, int64_t size, void *host, int32_t kind);
OTM_EXPORT int32_t __tgt_rtl_data_submit(int32_t id, void *tgt, void *host, int64_t size);
OTM_EXPORT int32_t __tgt_rtl_data_submit_async(int32_t id, void *tgt, void *host, int64_t size,
                                               __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_data_retrieve(int32_t id, void *host, void *tgt, int64_t size);
OTM_EXPORT int32_t __tgt_rtl_data_retrieve_async(int32_t id, void *host, void *tgt, int64_t size,
                                                 __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_is_data_exchangable(int32_t src, int32_t dst);
OTM_EXPORT int32_t __tgt_rtl_data_exchange(int32_t src, void *sptr, int32_t dst, void *dptr,
                                           int64_t size);
OTM_EXPORT int32_t __tgt_rtl_data_exchange_async(int32_t src, void *sptr, int32_t dst,
                                                 void *dptr, int64_t size,
                                                 __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_data_delete(int32_t id, void *tgt);
OTM_EXPORT int32_t __tgt_rtl_run_target_region(int32_t id, void *entry, void **args,
                                               ptrdiff_t *offsets, int32_t nargs);
OTM_EXPORT int32_t __tgt_rtl_run_target_region_async(int32_t id, void *entry, void **args,
                                                     ptrdiff_t *offsets, int32_t nargs,
                                                     __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_run_target_team_region(int32_t id, void *entry, void **args,
                                                    ptrdiff_t *offsets, int32_t nargs,
                                                    int32_t teams, int32_t threads,
                                                    uint64_t tripcount);
OTM_EXPORT int32_t __tgt_rtl_run_target_team_region_async(int32_t id, void *entry, void **args,
                                                          ptrdiff_t *offsets, int32_t nargs,
                                                          int32_t teams, int32_t threads,
                                                          uint64_t tripcount,
                                                          __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_synchronize(int32_t id, __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_create_event(int32_t id, void **event);
OTM_EXPORT int32_t __tgt_rtl_record_event(int32_t id, void *event, __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_wait_event(int32_t id, void *event, __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_sync_event(int32_t id, void *event);
OTM_EXPORT int32_t __tgt_rtl_destroy_event(int32_t id, void *event);
OTM_EXPORT int32_t __tgt_rtl_register_lib(__tgt_bin_desc *desc);
OTM_EXPORT int32_t __tgt_rtl_unregister_lib(__tgt_bin_desc *desc);
OTM_EXPORT int32_t __tgt_rtl_supports_empty_images(void);
OTM_EXPORT void __tgt_rtl_print_device_info(int32_t id);
OTM_EXPORT void __tgt_rtl_set_info_flag(uint32_t flags);

/* LLVM 16 (omptargetplugin.h on release/16.x; checked against the calls
 * and the plugins of Debian's libomp5-16). Required by libomptarget 16:
 * launch_kernel. Optional: the others (libomptarget 16 skips an absent
 * one; without data_lock, llvm_omp_target_lock_mem returns NULL). */
OTM_EXPORT int32_t __tgt_rtl_launch_kernel(int32_t id, void *entry, void **args,
                                           ptrdiff_t *offsets,
                                           __tgt_kernel_arguments *kargs,
                                           __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_init_plugin(void);
OTM_EXPORT int32_t __tgt_rtl_deinit_plugin(void);
OTM_EXPORT int32_t __tgt_rtl_deinit_device(int32_t id);
OTM_EXPORT int32_t __tgt_rtl_query_async(int32_t id, __tgt_async_info *ai);
OTM_EXPORT int32_t __tgt_rtl_data_lock(int32_t id, void *host, int64_t size, void **locked);
OTM_EXPORT int32_t __tgt_rtl_data_unlock(int32_t id, void *host);

#endif
