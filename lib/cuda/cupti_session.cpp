// The CUPTI session: the buffer callbacks, the resource and driver callbacks that log node
// clones and launch correlation ids, and collection switched on and off by reference count.
// Subscribing itself is in cupti_subscriber.cpp.
#include "cuda/cupti_session.hpp"

#include "cuda/cupti_check.hpp"
#include "cuda/cupti_subscriber.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>
#include <thread>

namespace cmdgraph::detail::cuda::cupti {

// What CUPTI gives the session's callbacks, which are plain functions.
struct SessionAccess {
  static void hand_over(Session& s, std::uint8_t* buffer, std::size_t valid) {
    s.hand_over(buffer, valid);
  }
  static void route(Session& s, std::uint32_t correlation, const Record& r) {
    s.route(correlation, r);
  }
  static void open(Session& s, std::uint32_t correlation,
                   const std::shared_ptr<LaunchRecords>& into) {
    s.open(correlation, into);
  }
  static void dropped(Session& s, std::size_t n) {
    std::lock_guard lock(s.mutex_);
    s.lost_.dropped += n;
  }
};

namespace {

// Large buffers: fewer hand-overs on CUPTI's thread; a chain of 1,000 kernels traced at every
// launch fills one in about 30 launches.
constexpr std::size_t buffer_bytes = 8u << 20;
constexpr std::size_t buffer_align = 8;

Session* the_session = nullptr;           // never destroyed: CUPTI may call back during exit
std::mutex start_mutex;

thread_local CloneLog* clone_log = nullptr;
thread_local const std::shared_ptr<LaunchRecords>* window_target = nullptr;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* most) {
  *buffer = static_cast<std::uint8_t*>(
      ::operator new(buffer_bytes, std::align_val_t(buffer_align), std::nothrow));
  *size = *buffer ? buffer_bytes : 0;
  *most = 0;  // as many records as fit
}

template <class R>
void route(const CUpti_Activity* activity) {
  const auto* r = reinterpret_cast<const R*>(activity);
  if (r->graphNodeId == 0 || !the_session) return;  // not work of a graph
  SessionAccess::route(*the_session, r->correlationId, {r->graphNodeId, r->start, r->end});
}

// On CUPTI's thread (or a flushing one): queued for the session's parser and back at once,
// since switching collection off waits for CUPTI's thread (parsing here held a launch's
// cuptiActivityDisable for as long as a full buffer took).
void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                               std::size_t valid) {
  if (the_session) {
    SessionAccess::hand_over(*the_session, buffer, valid);
  } else {
    ::operator delete(buffer, std::align_val_t(buffer_align));
  }
}

// Files the records of one buffer with their launches, then frees it (on the session's parser
// or a reader). Parsing calls are not counted by the door: fault injection stays deterministic
// for the threads that arm it.
void parse_buffer(std::uint8_t* buffer, std::size_t valid) {
  const Functions& cupti = loaded();  // once, not per record
  CUpti_Activity* activity = nullptr;
  while (cupti.cuptiActivityGetNextRecord(buffer, valid, &activity) == CUPTI_SUCCESS) {
    const CUpti_ActivityKind record_kind = activity->kind;  // CUPTI's, not a command's
    switch (record_kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: route<CUpti_ActivityKernel10>(activity); break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: route<CUpti_ActivityMemcpy6>(activity); break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2: route<CUpti_ActivityMemcpyPtoP4>(activity); break;
      case CUPTI_ACTIVITY_KIND_MEMSET: route<CUpti_ActivityMemset4>(activity); break;
      default: break;
    }
  }
  std::size_t dropped = 0;
  if (the_session &&
      cupti.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped) {
    SessionAccess::dropped(*the_session, dropped);
  }
  ::operator delete(buffer, std::align_val_t(buffer_align));
}

void on_clone(const CUpti_GraphData& g) {
  CloneLog& log = *clone_log;
  std::uint64_t original = 0, clone = 0;
  const CUptiResult a =
      CuptiDoor::try_call([&] { return loaded().cuptiGetGraphNodeId(g.originalNode, &original); });
  const CUptiResult b = a != CUPTI_SUCCESS ? a : CuptiDoor::try_call([&] {
    return loaded().cuptiGetGraphNodeId(g.node, &clone);
  });
  if (b != CUPTI_SUCCESS) {
    if (log.error.empty()) log.error = "cuptiGetGraphNodeId failed: " + describe(b);
    return;
  }
  log.pairs.emplace_back(original, clone);
}

// Synchronous, on the thread making the CUDA call; must not throw.
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    if (!clone_log) return;
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    on_clone(*static_cast<const CUpti_GraphData*>(resource->resourceDescriptor));
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    // cudaGraphLaunch and the cuGraphLaunch it makes: records carry one of their correlation
    // ids (the driver's, as CUPTI documents it; the runtime's is routed too, to be sure).
    // At entry, before any of the launch's work can finish and be handed over.
    const auto* call = static_cast<const CUpti_CallbackData*>(data);
    if (!window_target || call->callbackSite != CUPTI_API_ENTER || !the_session) return;
    SessionAccess::open(*the_session, call->correlationId, *window_target);
  }
}

}  // namespace

// ---- LaunchRecords ----

std::vector<Record> LaunchRecords::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::size_t LaunchRecords::size() const {
  std::lock_guard lock(mutex_);
  return records_.size();
}

std::uint32_t LaunchRecords::correlation() const {
  std::lock_guard lock(mutex_);
  return correlation_;
}

std::string LaunchRecords::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

// ---- Session ----

Session* Session::acquire(std::string& why) {
  std::lock_guard lock(start_mutex);
  if (the_session) return the_session;
  why.clear();
  try {
    (void)loaded();  // libcupti, loaded the first time a session starts
  } catch (const Error& e) {
    why = e.what();
    return nullptr;
  }
  if (!subscribe(&on_callback, &buffer_requested, &buffer_completed, why)) return nullptr;
  the_session = new Session();
  std::thread(&Session::parse_handed_over, the_session).detach();  // lives as long as it
  return the_session;
}

bool Session::started() {
  std::lock_guard lock(start_mutex);
  return the_session != nullptr;
}

void Session::hand_over(std::uint8_t* buffer, std::size_t valid) {
  {
    std::lock_guard lock(handed_mutex_);
    handed_.emplace_back(buffer, valid);
  }
  handed_cv_.notify_one();
}

void Session::parse_handed_over() {
  for (;;) {
    {
      std::unique_lock lock(handed_mutex_);
      handed_cv_.wait(lock, [&] { return !handed_.empty(); });
    }
    parse_now();
  }
}

void Session::parse_now() {
  // One parser at a time, so that a reader returns only once a buffer the worker had taken is
  // filed too.
  std::lock_guard parsing(parse_mutex_);
  for (;;) {
    std::pair<std::uint8_t*, std::size_t> next;
    {
      std::lock_guard lock(handed_mutex_);
      if (handed_.empty()) return;
      next = handed_.front();
      handed_.pop_front();
    }
    parse_buffer(next.first, next.second);
  }
}

void Session::route(std::uint32_t correlation, const Record& record) {
  std::shared_ptr<LaunchRecords> into;
  {
    std::lock_guard lock(mutex_);
    for (auto it = launches_.rbegin(); it != launches_.rend(); ++it) {
      if (it->first == correlation) {
        into = it->second.lock();
        break;
      }
    }
    if (!into) {
      ++lost_.unclaimed;
      constexpr std::size_t kept = 1u << 16;
      if (unclaimed_.size() == kept) unclaimed_.pop_front();
      unclaimed_.push_back(record);
      return;
    }
  }
  std::lock_guard lock(into->mutex_);
  into->records_.push_back(record);
}

void Session::open(std::uint32_t correlation, const std::shared_ptr<LaunchRecords>& into) {
  {
    std::lock_guard lock(mutex_);
    // Launches whose records nobody waits for any more make room (a few live at a time).
    std::erase_if(launches_, [](const auto& l) { return l.second.expired(); });
    launches_.emplace_back(correlation, into);
  }
  std::lock_guard lock(into->mutex_);
  if (into->correlation_ == 0) into->correlation_ = correlation;
}

std::string Session::collect(unsigned what, bool on) {
  std::lock_guard lock(collect_mutex_);
  unsigned flipped = 0;  // the bits that go on or off: nobody else holds them
  for (unsigned b = 0; b < std::size(collecting_); ++b) {
    if (!(what & (1u << b))) continue;
    const int before = collecting_[b];
    collecting_[b] += on ? 1 : -1;
    if ((before == 0) == on) flipped |= 1u << b;
  }
  const std::string error = flipped ? switch_kinds(flipped, on) : std::string();
  if (!error.empty() && on) {
    // Not on: undone, so that the next user tries again.
    for (unsigned b = 0; b < std::size(collecting_); ++b) collecting_[b] -= (what >> b) & 1u;
    (void)switch_kinds(flipped, false);
  }
  return error;
}

void Session::flush(bool forced) {
  CMDGRAPH_CUPTI(no_command, cuptiActivityFlushAll,
                 forced ? static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) : 0u);
  parse_now();
}

std::int64_t Session::steady_to_cupti() {
  // The steady clock read on both sides of CUPTI's: the pair is as close as the calls allow.
  const auto before = std::chrono::steady_clock::now();
  std::uint64_t cupti_now = 0;
  CMDGRAPH_CUPTI(no_command, cuptiGetTimestamp, &cupti_now);
  const auto after = std::chrono::steady_clock::now();
  const auto mid = before + (after - before) / 2;
  const std::int64_t steady_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(mid.time_since_epoch()).count();
  return static_cast<std::int64_t>(cupti_now) - steady_ns;
}

Session::Lost Session::lost() const {
  std::lock_guard lock(mutex_);
  return lost_;
}

std::vector<Record> Session::unclaimed(std::uint64_t from) const {
  std::lock_guard lock(mutex_);
  std::vector<Record> out;
  for (const Record& r : unclaimed_) {
    if (r.start >= from) out.push_back(r);
  }
  return out;
}

int Session::collecting() const {
  std::lock_guard lock(collect_mutex_);
  return *std::max_element(std::begin(collecting_), std::end(collecting_));
}

Session::Collecting::Collecting(Session& session, unsigned what)
    : session_(session), what_(what) {
  error_ = session_.collect(what_, true);
  counted_ = error_.empty();
}

Session::Collecting::~Collecting() {
  // A failed switch-off costs CUPTI's overhead only.
  if (counted_) (void)session_.collect(what_, false);
}

Session::Window::Window(Session& session, std::shared_ptr<LaunchRecords> into, unsigned collect)
    : into_(std::move(into)) {
  if (collect) {
    collecting_ = std::make_unique<Collecting>(session, collect);
    if (!collecting_->error().empty()) {
      std::lock_guard lock(into_->mutex_);
      into_->error_ = collecting_->error();
      return;  // not traced: no window
    }
  }
  window_target = &into_;
}

Session::Window::~Window() {
  if (window_target == &into_) window_target = nullptr;
}

// ---- CloneLog ----

CloneLog::CloneLog() : previous_(clone_log) { clone_log = this; }

CloneLog::~CloneLog() { clone_log = previous_; }

std::vector<std::pair<std::uint64_t, std::uint64_t>> CloneLog::take(Served served) {
  if (!error.empty()) {
    const std::string of = served.name.empty() ? "" : " for '" + std::string(served.name) + "'";
    throw Refused(errc::cuda_error, "CUPTI's clone callback failed" + of + ": " + error);
  }
  return std::move(pairs);
}

std::uint64_t node_id(cudaGraphNode_t node, Served served) {
  std::uint64_t id = 0;
  CMDGRAPH_CUPTI(served, cuptiGetGraphNodeId, node, &id);
  return id;
}

}  // namespace cmdgraph::detail::cuda::cupti
