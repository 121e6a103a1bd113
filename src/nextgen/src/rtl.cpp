//===- rtl.cpp - omptarget-mpi inside libomptarget 19 ---------------------===//
//
// From LLVM 19 on, libomptarget links its plugins in (one static library
// each, created by createPlugin_<name>()) and calls them through the C++
// classes of plugins-nextgen/common (GenericPluginTy, GenericDeviceTy,
// GenericKernelTy). This file is those classes for omptarget-mpi, and
// nothing more: every call becomes a call of the plugin's C ABI
// (__tgt_rtl_*, the entry points libomptarget 14 and 16 call), from the
// same libomptarget.rtl.mpi.so the launcher puts first for those runtimes.
// The protocol, the devices, the worker ranks and their errors stay there;
// there is no second implementation here (docs/DESIGN.md §2, "LLVM 19").
//
// The plugin is found beside this libomptarget: the launcher's plugin
// directory holds libomptarget.so.19.1 and libomptarget.rtl.x86_64.so (our
// plugin) side by side, so dlopen takes the one of this build and MPI.
//
// Built by ci/llvm19.sh inside Debian's offload/ source, as
// offload/plugins-nextgen/mpi (this directory); no upstream file changes.
//
//===----------------------------------------------------------------------===//

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

#include "Shared/Debug.h"

#include "GlobalHandler.h"
#include "PluginInterface.h"
#include "PluginManager.h"
#include "Utils/ELF.h"
#include "omptarget.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"
#include "llvm/Frontend/OpenMP/OMPGridValues.h"

namespace llvm {
namespace omp {
namespace target {
namespace plugin {

// The C ABI of libomptarget.rtl.mpi.so (src/plugin/abi.h). The structures
// it takes are the leading fields of libomptarget 19's: __tgt_async_info
// begins with Queue, the only field the plugin reads or writes, and the
// image and descriptor records are unchanged since LLVM 14.
struct OtmRTLTy {
  int32_t (*init_plugin)(void);
  int32_t (*deinit_plugin)(void);
  int32_t (*number_of_devices)(void);
  int32_t (*register_lib)(__tgt_bin_desc *);
  int32_t (*unregister_lib)(__tgt_bin_desc *);
  int64_t (*init_requires)(int64_t);
  int32_t (*init_device)(int32_t);
  int32_t (*deinit_device)(int32_t);
  __tgt_target_table *(*load_binary)(int32_t, __tgt_device_image *);
  void *(*data_alloc)(int32_t, int64_t, void *, int32_t);
  int32_t (*data_delete)(int32_t, void *);
  int32_t (*data_submit_async)(int32_t, void *, void *, int64_t,
                               __tgt_async_info *);
  int32_t (*data_retrieve_async)(int32_t, void *, void *, int64_t,
                                 __tgt_async_info *);
  int32_t (*is_data_exchangable)(int32_t, int32_t);
  int32_t (*data_exchange_async)(int32_t, void *, int32_t, void *, int64_t,
                                 __tgt_async_info *);
  int32_t (*run_target_team_region_async)(int32_t, void *, void **,
                                          ptrdiff_t *, int32_t, int32_t,
                                          int32_t, uint64_t,
                                          __tgt_async_info *);
  int32_t (*synchronize)(int32_t, __tgt_async_info *);
  int32_t (*query_async)(int32_t, __tgt_async_info *);
  int32_t (*create_event)(int32_t, void **);
  int32_t (*record_event)(int32_t, void *, __tgt_async_info *);
  int32_t (*wait_event)(int32_t, void *, __tgt_async_info *);
  int32_t (*sync_event)(int32_t, void *);
  int32_t (*destroy_event)(int32_t, void *);
  void (*print_device_info)(int32_t);
};

// Each entry point by name, in the order of OtmRTLTy's fields.
static const char *const OtmRTLNames[] = {
    "__tgt_rtl_init_plugin",
    "__tgt_rtl_deinit_plugin",
    "__tgt_rtl_number_of_devices",
    "__tgt_rtl_register_lib",
    "__tgt_rtl_unregister_lib",
    "__tgt_rtl_init_requires",
    "__tgt_rtl_init_device",
    "__tgt_rtl_deinit_device",
    "__tgt_rtl_load_binary",
    "__tgt_rtl_data_alloc",
    "__tgt_rtl_data_delete",
    "__tgt_rtl_data_submit_async",
    "__tgt_rtl_data_retrieve_async",
    "__tgt_rtl_is_data_exchangable",
    "__tgt_rtl_data_exchange_async",
    "__tgt_rtl_run_target_team_region_async",
    "__tgt_rtl_synchronize",
    "__tgt_rtl_query_async",
    "__tgt_rtl_create_event",
    "__tgt_rtl_record_event",
    "__tgt_rtl_wait_event",
    "__tgt_rtl_sync_event",
    "__tgt_rtl_destroy_event",
    "__tgt_rtl_print_device_info",
};
static_assert(sizeof(OtmRTLNames) / sizeof(*OtmRTLNames) ==
                  sizeof(OtmRTLTy) / sizeof(void (*)(void)),
              "one name per entry point");

// The plugin's file name, as the launcher's plugin directory holds it.
static const char OtmPluginFile[] = "libomptarget.rtl.x86_64.so";

// A C ABI status as an Error.
static Error check(int32_t Rc, const char *What, int32_t DeviceId) {
  if (Rc == OFFLOAD_SUCCESS)
    return Plugin::success();
  return Plugin::error("omptarget-mpi: %s failed on device %d", What,
                       DeviceId);
}

// An image loaded on a device: the table the plugin's load_binary returned,
// the host's entries with the worker's addresses, by which kernels are
// launched and globals read and written.
struct MPIDeviceImageTy : public DeviceImageTy {
  MPIDeviceImageTy(int32_t ImageId, GenericDeviceTy &Device,
                   const __tgt_device_image *TgtImage,
                   const __tgt_target_table *Table)
      : DeviceImageTy(ImageId, Device, TgtImage), Table(Table) {}

  // The worker's address of the entry `Name`, or nullptr.
  void *lookup(StringRef Name) const {
    for (const __tgt_offload_entry *E = Table->EntriesBegin;
         E < Table->EntriesEnd; ++E)
      if (E->name && Name == E->name)
        return E->addr;
    return nullptr;
  }

private:
  // Owned by the plugin, which frees it when the image's descriptor is
  // unregistered: at the program's end, or when a library is opened again.
  const __tgt_target_table *Table;
};

// Addresses of kernels and globals on the worker, from the image's table.
struct MPIGlobalHandlerTy final : public GenericGlobalHandlerTy {
  Error getGlobalMetadataFromDevice(GenericDeviceTy &Device,
                                    DeviceImageTy &Image,
                                    GlobalTy &DeviceGlobal) override {
    void *Addr =
        static_cast<MPIDeviceImageTy &>(Image).lookup(DeviceGlobal.getName());
    if (!Addr)
      return Plugin::error("omptarget-mpi: no entry '%s' in the device image",
                           DeviceGlobal.getName().data());
    DeviceGlobal.setPtr(Addr);
    return Plugin::success();
  }
};

// A kernel: its worker address, launched with the teams and thread limit
// of the construct, as under libomptarget 16 (the worker's libomp shares
// the work out inside the region, as the host plugin's does).
struct MPIKernelTy : public GenericKernelTy {
  MPIKernelTy(const char *Name) : GenericKernelTy(Name) {}

  Error initImpl(GenericDeviceTy &Device, DeviceImageTy &Image) override {
    GlobalTy Global(getName(), 0);
    if (auto Err = Device.Plugin.getGlobalHandler().getGlobalMetadataFromDevice(
            Device, Image, Global))
      return Err;
    Entry = Global.getPtr();
    // As the host plugin: no device runtime state machine, one "thread"
    // from libomptarget's view.
    KernelEnvironment.Configuration.ExecMode = OMP_TGT_EXEC_MODE_GENERIC;
    KernelEnvironment.Configuration.MayUseNestedParallelism = /*Unknown=*/2;
    KernelEnvironment.Configuration.UseGenericStateMachine = /*Unknown=*/2;
    MaxNumThreads = 1;
    return Plugin::success();
  }

  Error launchImpl(GenericDeviceTy &Device, uint32_t NumThreads,
                   uint64_t NumBlocks, KernelArgsTy &KernelArgs,
                   KernelLaunchParamsTy LaunchParams,
                   AsyncInfoWrapperTy &AsyncInfoWrapper) const override;

private:
  void *Entry = nullptr;
};

struct MPIDeviceTy : public GenericDeviceTy {
  MPIDeviceTy(GenericPluginTy &Plugin, int32_t DeviceId, int32_t NumDevices,
              const OtmRTLTy &RTL)
      : GenericDeviceTy(Plugin, DeviceId, NumDevices, GridValues), RTL(RTL) {}

  const OtmRTLTy &RTL;

  // libomptarget 19 initialises every device at registration, also on a
  // worker rank, whose plugin starts serving inside init_device if it
  // ever gets there: so the plugin's device starts on first use, at the
  // first image load, as under libomptarget 14 and 16.
  Error initImpl(GenericPluginTy &) override { return Plugin::success(); }

  Error deinitImpl() override {
    if (!Started)
      return Plugin::success();
    return check(RTL.deinit_device(DeviceId), "deinit_device", DeviceId);
  }

  std::string getComputeUnitKind() const override { return "mpi-rank"; }

  Expected<GenericKernelTy &> constructKernel(const char *Name) override {
    MPIKernelTy *Kernel = Plugin.allocate<MPIKernelTy>();
    if (!Kernel)
      return Plugin::error("omptarget-mpi: out of memory for kernel %s", Name);
    new (Kernel) MPIKernelTy(Name);
    return *Kernel;
  }

  Error setContext() override { return Plugin::success(); }

  Expected<DeviceImageTy *> loadBinaryImpl(const __tgt_device_image *TgtImage,
                                           int32_t ImageId) override {
    if (!Started) {
      RTL.init_requires(PM->getRequirements());
      if (auto Err = check(RTL.init_device(DeviceId), "init_device", DeviceId))
        return std::move(Err);
      Started = true;
    }
    __tgt_target_table *Table = RTL.load_binary(
        DeviceId, const_cast<__tgt_device_image *>(TgtImage));
    if (!Table)
      return Plugin::error("omptarget-mpi: load_binary failed on device %d",
                           DeviceId);
    MPIDeviceImageTy *Image = Plugin.allocate<MPIDeviceImageTy>();
    if (!Image)
      return Plugin::error("omptarget-mpi: out of memory");
    new (Image) MPIDeviceImageTy(ImageId, *this, TgtImage, Table);
    return Image;
  }

  void *allocate(size_t Size, void *HstPtr, TargetAllocTy Kind) override {
    // The plugin knows the three kinds of LLVM 14; a non-blocking device
    // allocation is a device allocation there.
    if (Kind == TARGET_ALLOC_DEVICE_NON_BLOCKING)
      Kind = TARGET_ALLOC_DEVICE;
    return RTL.data_alloc(DeviceId, int64_t(Size), HstPtr, Kind);
  }

  int free(void *TgtPtr, TargetAllocTy Kind) override {
    // omp_target_free frees llvm_omp_target_alloc_host's memory as kind
    // DEFAULT, and libomptarget then keeps its record of that memory as
    // pinned host memory: a later host allocation at the same address
    // fails ("Cannot insert entry due to an existing one", with its own
    // host plugin too). The record goes with the memory.
    if (Kind != TARGET_ALLOC_HOST && PinnedAllocs.isHostPinnedBuffer(TgtPtr))
      consumeError(PinnedAllocs.unregisterHostBuffer(TgtPtr));
    return RTL.data_delete(DeviceId, TgtPtr);
  }

  // Transfers go through MPI, which needs no page locking (as the plugin's
  // data_lock says): the locked pointer is the host pointer.
  Expected<void *> dataLockImpl(void *HstPtr, int64_t) override {
    return HstPtr;
  }
  Error dataUnlockImpl(void *) override { return Plugin::success(); }
  Expected<bool> isPinnedPtrImpl(void *, void *&, void *&,
                                 size_t &) const override {
    return false;
  }

  Error dataSubmitImpl(void *TgtPtr, const void *HstPtr, int64_t Size,
                       AsyncInfoWrapperTy &AsyncInfo) override {
    return check(RTL.data_submit_async(DeviceId, TgtPtr,
                                       const_cast<void *>(HstPtr), Size,
                                       AsyncInfo),
                 "data_submit", DeviceId);
  }

  Error dataRetrieveImpl(void *HstPtr, const void *TgtPtr, int64_t Size,
                         AsyncInfoWrapperTy &AsyncInfo) override {
    return check(RTL.data_retrieve_async(DeviceId, HstPtr,
                                         const_cast<void *>(TgtPtr), Size,
                                         AsyncInfo),
                 "data_retrieve", DeviceId);
  }

  Error dataExchangeImpl(const void *SrcPtr, GenericDeviceTy &Dst,
                         void *DstPtr, int64_t Size,
                         AsyncInfoWrapperTy &AsyncInfo) override {
    return check(RTL.data_exchange_async(DeviceId, const_cast<void *>(SrcPtr),
                                         Dst.getDeviceId(), DstPtr, Size,
                                         AsyncInfo),
                 "data_exchange", DeviceId);
  }

  Error synchronizeImpl(__tgt_async_info &AsyncInfo) override {
    return check(RTL.synchronize(DeviceId, &AsyncInfo), "synchronize",
                 DeviceId);
  }

  Error queryAsyncImpl(__tgt_async_info &AsyncInfo) override {
    return check(RTL.query_async(DeviceId, &AsyncInfo), "query_async",
                 DeviceId);
  }

  // Interoperability objects (omp_interop_t) name a native queue or
  // device; there is none to name.
  Error initAsyncInfoImpl(AsyncInfoWrapperTy &) override {
    return Plugin::error("omptarget-mpi: interop objects are not supported");
  }
  Error initDeviceInfoImpl(__tgt_device_info *) override {
    return Plugin::error("omptarget-mpi: interop objects are not supported");
  }

  Error createEventImpl(void **Event) override {
    return check(RTL.create_event(DeviceId, Event), "create_event", DeviceId);
  }
  Error destroyEventImpl(void *Event) override {
    return check(RTL.destroy_event(DeviceId, Event), "destroy_event",
                 DeviceId);
  }
  Error recordEventImpl(void *Event, AsyncInfoWrapperTy &AsyncInfo) override {
    return check(RTL.record_event(DeviceId, Event, AsyncInfo), "record_event",
                 DeviceId);
  }
  Error waitEventImpl(void *Event, AsyncInfoWrapperTy &AsyncInfo) override {
    return check(RTL.wait_event(DeviceId, Event, AsyncInfo), "wait_event",
                 DeviceId);
  }
  Error syncEventImpl(void *Event) override {
    return check(RTL.sync_event(DeviceId, Event), "sync_event", DeviceId);
  }

  Error obtainInfoImpl(InfoQueueTy &Info) override {
    Info.add("Device Type", "omptarget-mpi: an MPI rank");
    Info.add("MPI rank", DeviceId + 1);
    return Plugin::success();
  }

  // No device runtime library runs on a worker: nothing to set up there.
  bool shouldSetupDeviceEnvironment() const override { return false; }
  bool shouldSetupDeviceMemoryPool() const override { return false; }

  Error getDeviceStackSize(uint64_t &V) override {
    V = 0;
    return Plugin::success();
  }
  Error setDeviceStackSize(uint64_t) override { return Plugin::success(); }
  Error getDeviceHeapSize(uint64_t &V) override {
    V = 0;
    return Plugin::success();
  }
  Error setDeviceHeapSize(uint64_t) override { return Plugin::success(); }

private:
  bool Started = false; // the plugin's init_device succeeded

  // As the host plugin's: libomptarget's grid is one team of one thread;
  // the region's own teams and threads are the worker's (launchImpl).
  static constexpr GV GridValues = {1, 1, 1, 1, 1, 1, 1};
};

Error MPIKernelTy::launchImpl(GenericDeviceTy &Device, uint32_t, uint64_t,
                              KernelArgsTy &KernelArgs,
                              KernelLaunchParamsTy LaunchParams,
                              AsyncInfoWrapperTy &AsyncInfo) const {
  // LaunchParams.Data holds the arguments' values, offsets applied, with
  // the kernel launch environment first (what clang 19's kernels take
  // first): the plugin passes them on as they are.
  const OtmRTLTy &RTL = static_cast<MPIDeviceTy &>(Device).RTL;
  uint32_t NumArgs = KernelArgs.NumArgs;
  if (NumArgs > INT32_MAX)
    return Plugin::error("omptarget-mpi: too many kernel arguments");
  SmallVector<ptrdiff_t, 16> Offsets(NumArgs, 0);
  auto Clamp = [](uint32_t V) { return int32_t(V > INT32_MAX ? INT32_MAX : V); };
  return check(RTL.run_target_team_region_async(
                   Device.getDeviceId(), Entry,
                   static_cast<void **>(LaunchParams.Data), Offsets.data(),
                   int32_t(NumArgs), Clamp(KernelArgs.NumTeams[0]),
                   Clamp(KernelArgs.ThreadLimit[0]), KernelArgs.Tripcount,
                   AsyncInfo),
               "run_target_region", Device.getDeviceId());
}

struct MPIPluginTy final : public GenericPluginTy {
  MPIPluginTy() : GenericPluginTy(getTripleArch()) {}
  MPIPluginTy(const MPIPluginTy &) = delete;
  MPIPluginTy(MPIPluginTy &&) = delete;

  // Loads the plugin and starts it (MPI, the settings, this rank's role).
  // A process without an MPI job has no devices here, as with 14 and 16;
  // nor has one whose plugin cannot be loaded, with a line saying why
  // (libomptarget reports a failed initImpl only in its debug output).
  Expected<int32_t> initImpl() override {
    if (auto Err = openPlugin()) {
      std::fprintf(stderr, "%s: no MPI devices\n",
                   toString(std::move(Err)).c_str());
      return 0;
    }
    RTL.init_plugin();
    return RTL.number_of_devices();
  }

  // The end of the program: the descriptors handed to the plugin are
  // unregistered, the last of which ends the job (the EXIT protocol), as
  // the last unregister_lib does under libomptarget 14 and 16.
  Error deinitImpl() override {
    if (!Handle)
      return Plugin::success();
    std::vector<__tgt_bin_desc *> Descs;
    {
      std::lock_guard<std::mutex> Lock(DescsLock);
      Descs.swap(Registered);
    }
    for (auto It = Descs.rbegin(); It != Descs.rend(); ++It)
      RTL.unregister_lib(*It);
    RTL.deinit_plugin();
    return Plugin::success();
  }

  GenericDeviceTy *createDevice(GenericPluginTy &Plugin, int32_t DeviceId,
                                int32_t NumDevices) override {
    return new MPIDeviceTy(Plugin, DeviceId, NumDevices, RTL);
  }

  GenericGlobalHandlerTy *createGlobalHandler() override {
    return new MPIGlobalHandlerTy();
  }

  uint16_t getMagicElfBits() const override {
    return utils::elf::getTargetMachine();
  }

  bool isDataExchangable(int32_t Src, int32_t Dst) override {
    return RTL.is_data_exchangable(Src, Dst);
  }

  // Called for each device of each image libomptarget registers, so here
  // the plugin gets the image's descriptor, as register_lib gave it before
  // LLVM 19: the nextgen interface hands a plugin no descriptor, and
  // libomptarget's list of images holds it. On a worker rank, the last
  // descriptor of the program's start-up makes the plugin serve from here
  // until the job ends (it does not return).
  Expected<bool> isELFCompatible(uint32_t, StringRef Image) const override {
    ::DeviceImageTy *DI = imageOf(Image.data());
    if (DI)
      registerImage(*DI);
    return true;
  }

  Triple::ArchType getTripleArch() const override { return Triple::x86_64; }

  const char *getName() const override { return GETNAME(TARGET_NAME); }

private:
  Error openPlugin();

  // libomptarget's record of the image whose ELF starts at `Start`: the
  // newest, as a library dlclose()d and opened again may lie where it was
  // and libomptarget keeps the records of both. The caller, its
  // registerLib, holds the lock of that list.
  static ::DeviceImageTy *imageOf(const void *Start) {
    ::DeviceImageTy *Found = nullptr;
    for (::DeviceImageTy &DI : PM->deviceImages()) // libomptarget's own
      if (DI.getExecutableImage().ImageStart == Start)
        Found = &DI;
    return Found;
  }

  // Hands the image's descriptor to the plugin, once per registration. A
  // descriptor registered again (a record of libomptarget not seen yet) is
  // that of a library dlclose()d and opened again, which libomptarget 19
  // does not tell its plugins about: the plugin first drops the images it
  // loaded from it, as at unregister_lib under libomptarget 14 and 16.
  void registerImage(::DeviceImageTy &DI) const {
    __tgt_bin_desc *Desc = &DI.getBinaryDesc();
    bool Again = false;
    {
      std::lock_guard<std::mutex> Lock(DescsLock);
      for (::DeviceImageTy *Seen : SeenImages)
        if (Seen == &DI)
          return;
      SeenImages.push_back(&DI);
      for (__tgt_bin_desc *D : Registered)
        Again |= D == Desc;
      if (!Again)
        Registered.push_back(Desc);
    }
    if (Again)
      RTL.unregister_lib(Desc);
    RTL.register_lib(Desc);
  }

  OtmRTLTy RTL = {};
  void *Handle = nullptr; // the plugin, once every entry point is found
  mutable std::mutex DescsLock;
  mutable std::vector<__tgt_bin_desc *> Registered; // in the plugin now
  mutable std::vector<::DeviceImageTy *> SeenImages; // handed to it
};

// A function of this library, whose address dladdr maps to its file.
static void otmSelf() {}

Error MPIPluginTy::openPlugin() {
  // This libomptarget's directory: the launcher's plugin directory.
  Dl_info Self;
  std::string Path = OtmPluginFile;
  if (dladdr(reinterpret_cast<void *>(&otmSelf), &Self) &&
      Self.dli_fname && std::strchr(Self.dli_fname, '/')) {
    Path = Self.dli_fname;
    Path = Path.substr(0, Path.rfind('/') + 1) + OtmPluginFile;
  }
  void *Lib = dlopen(Path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!Lib)
    return Plugin::error("omptarget-mpi: cannot load the plugin: %s",
                         dlerror());
  void **Slot = reinterpret_cast<void **>(&RTL);
  for (const char *Name : OtmRTLNames) {
    *Slot++ = dlsym(Lib, Name);
    if (!Slot[-1]) {
      RTL = {};
      return Plugin::error("omptarget-mpi: %s has no %s (a plugin of "
                           "another version?)",
                           Path.c_str(), Name);
    }
  }
  Handle = Lib; // never closed: the plugin's threads and MPI live on
  return Plugin::success();
}

} // namespace plugin
} // namespace target
} // namespace omp
} // namespace llvm

extern "C" {
llvm::omp::target::plugin::GenericPluginTy *createPlugin_mpi() {
  return new llvm::omp::target::plugin::MPIPluginTy();
}
}
