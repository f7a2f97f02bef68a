// Subscribing to CUPTI (callbacks, the graph launch and node clone callbacks, the activity
// kinds tried once) and switching the activity kinds of work bits on and off.
#include "cuda/cupti_subscriber.hpp"

#include "cuda/cupti_check.hpp"

namespace cmdgraph::detail::cuda::cupti {
namespace {

// The activity kinds of each work bit. Kernels through the concurrent kind, so traced kernels
// still run side by side.
struct Collected {
  unsigned work;
  CUpti_ActivityKind kind;
};
constexpr Collected collected[] = {
    {work::kernels, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
    {work::copies, CUPTI_ACTIVITY_KIND_MEMCPY},
    {work::copies, CUPTI_ACTIVITY_KIND_MEMCPY2},
    {work::fills, CUPTI_ACTIVITY_KIND_MEMSET}};

}  // namespace

std::string switch_kinds(unsigned what, bool on) {
  std::string error;
  for (const auto& [bit, kind] : collected) {
    if (!(what & bit)) continue;
    const CUptiResult r = CuptiDoor::try_call([&] {
      const Functions& cupti = loaded();
      return on ? cupti.cuptiActivityEnable(kind) : cupti.cuptiActivityDisable(kind);
    });
    if (r != CUPTI_SUCCESS && error.empty()) {
      error = std::string(on ? "cuptiActivityEnable" : "cuptiActivityDisable") + " failed: " +
              describe(r);
    }
  }
  return error;
}

bool subscribe(CUpti_CallbackFunc on_callback, CUpti_BuffersCallbackRequestFunc buffer_requested,
               CUpti_BuffersCallbackCompleteFunc buffer_completed, std::string& why) {
  CUpti_SubscriberHandle subscriber = nullptr;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "cmdgraph";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder - 1;
  const CUptiResult subscribed =
      CuptiDoor::try_call([&] {
        return loaded().cuptiSubscribe_v2(&subscriber, on_callback, nullptr, &params);
      });
  if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    why = std::string("another CUPTI client holds CUPTI's one subscriber") +
          (holder[0] ? std::string(" (") + holder + ")" : std::string()) +
          ", as Nsight Systems does";
    return false;
  }
  if (subscribed != CUPTI_SUCCESS) {
    why = "cuptiSubscribe_v2 failed: " + describe(subscribed);
    return false;
  }
  auto step = [&](const char* call, CUptiResult r) {
    if (r == CUPTI_SUCCESS || !why.empty()) return;
    why = std::string(call) + " failed: " + describe(r);
  };
  step("cuptiActivityRegisterCallbacks", CuptiDoor::try_call([&] {
         return loaded().cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
       }));
  step("cuptiEnableCallback", CuptiDoor::try_call([&] {
         return loaded().cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                    CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
       }));
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz}) {
    step("cuptiEnableCallback", CuptiDoor::try_call([&] {
           return loaded().cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
         }));
  }
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000}) {
    step("cuptiEnableCallback", CuptiDoor::try_call([&] {
           return loaded().cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
         }));
  }
  // Every kind once on and off: a kind CUPTI refuses (another tool, an old device) shows now,
  // at compile time, rather than at a launch.
  if (why.empty()) why = switch_kinds(work::all, true);
  const std::string off = switch_kinds(work::all, false);
  if (why.empty()) why = off;
  if (why.empty()) return true;
  if (why.find("MULTIPLE_SUBSCRIBERS") != std::string::npos) {
    why = "another CUPTI client holds CUPTI (" + why + "), as Nsight Systems does";
  }
  (void)CuptiDoor::try_call([&] { return loaded().cuptiUnsubscribe(subscriber); });
  return false;
}

}  // namespace cmdgraph::detail::cuda::cupti
