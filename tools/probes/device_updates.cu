// device_updates.cu -- standalone probe: device-updatable kernel nodes and
// device graph launch, asked of the real GPU with the plain CUDA runtime API.
//
// Build (relocatable device code + device runtime are required for the
// device-side graph functions):
//   nvcc -std=c++20 -O2 -arch=sm_90 -rdc=true tools/probes/device_updates.cu -o probe -lcudadevrt
// Run:
//   ./probe            # all questions, in the order 1 2 3 5 4 r
//   ./probe 1 4        # only the named ones (r = the "risky" extras)
//
// Output: one line per answer, "Qn name: answer (details)". Every CUDA return
// code goes through CK (a setup call: failure is unexpected) or TRY (a call
// whose failure is itself the answer); both print the call, the line, the
// error name and string, and count.  See tools/probes/README.md.

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

// ---------------------------------------------------------------------------
// error accounting
// ---------------------------------------------------------------------------
static int g_err = 0;  // setup calls that failed (unexpected)
static int g_ans = 0;  // probed calls that failed (the failure is an answer)

static cudaError_t ck_(cudaError_t e, const char* call, int line, bool answer) {
  if (e != cudaSuccess) {
    if (answer)
      ++g_ans;
    else
      ++g_err;
    std::printf("    %s line %d: %s -> %s: %s\n", answer ? "[answer-err]" : "[ERR]", line, call,
                cudaGetErrorName(e), cudaGetErrorString(e));
    std::fflush(stdout);
    (void)cudaGetLastError();  // clear a non-sticky error so later calls are not blamed
  }
  return e;
}
// the call in progress, for the crash handler
static const char* volatile g_step = "start";
static volatile int g_line = 0;
static const char* volatile g_job = "-";
static void mark(const char* call, int line) {
  g_step = call;
  g_line = line;
}
#define CK(x) (mark(#x, __LINE__), ck_((x), #x, __LINE__, false))
#define TRY(x) (mark(#x, __LINE__), ck_((x), #x, __LINE__, true))
static void onSignal(int sig) {
  char buf[600];
  int n = std::snprintf(buf, sizeof buf, "    CRASH: signal %d in job %s, in or after the call at line %d: %s\n", sig,
                        (const char*)g_job, (int)g_line, (const char*)g_step);
  if (n > 0) (void)!write(1, buf, (size_t)n);
  _exit(128 + sig);
}

static std::string es(cudaError_t e) { return std::string(cudaGetErrorName(e)); }
static std::string esl(cudaError_t e) {
  if (e == cudaSuccess) return "cudaSuccess";
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

#define ANS(...)                    \
  do {                              \
    std::printf(__VA_ARGS__);       \
    std::printf("\n");              \
    std::fflush(stdout);            \
  } while (0)

// ---------------------------------------------------------------------------
// watchdog: a hung question must not eat the device budget
// ---------------------------------------------------------------------------
static std::atomic<long long> g_deadline{0};
static std::atomic<const char*> g_current{"init"};
static long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
static void watchdog() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    long long d = g_deadline.load();
    if (d && now_ms() > d) {
      std::printf("WATCHDOG: question %s exceeded its time limit; exiting (g_err=%d g_ans=%d)\n",
                  g_current.load(), g_err, g_ans);
      std::fflush(stdout);
      _exit(3);
    }
  }
}
static void arm(const char* q, int seconds) {
  g_current = q;
  g_deadline = now_ms() + seconds * 1000LL;
}

static double med(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
using clk = std::chrono::steady_clock;
static double us_since(clk::time_point t0, clk::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---------------------------------------------------------------------------
// kernels
// ---------------------------------------------------------------------------
// targets ("B")
__global__ void k_param(int v, int* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = v;
}
__global__ void k_grid(int* out) {
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) out[0] = (int)gridDim.x;
    atomicAdd(&out[1], 1);
  }
}
__global__ void k_mark(int* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = 7;
}
__global__ void k_small(int v, int i, int* out) {
  if (threadIdx.x == 0) out[i] = v;
}

struct Ctl {
  int ctr;   // incremented by every updater run (k)
  int mode;  // 0: updater does nothing but count
  int err;   // first device-side error code
  int what;  // 0 param, 1 grid, 2 enable, 3 param via cudaGraphKernelNodeUpdatesApply
};

// updater ("A"): on its k-th run sets param = 100+k, grid = 2+k, enabled = (k even)
__global__ void k_updater(cudaGraphDeviceNode_t n, size_t off, Ctl* c) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int k = ++c->ctr;
  if (!c->mode) return;
  cudaError_t e = cudaSuccess;
  switch (c->what) {
    case 0: {
      int v = 100 + k;
      e = cudaGraphKernelNodeSetParam(n, off, &v, sizeof(int));
      break;
    }
    case 1:
      e = cudaGraphKernelNodeSetGridDim(n, dim3(2 + k, 1, 1));
      break;
    case 2:
      e = cudaGraphKernelNodeSetEnabled(n, (k % 2) == 0);
      break;
    case 3: {
      int v = 100 + k;
      cudaGraphKernelNodeUpdate u{};
      u.node = n;
      u.field = cudaGraphKernelNodeFieldParam;
      u.updateData.param.pValue = &v;
      u.updateData.param.offset = off;
      u.updateData.param.size = sizeof(int);
      e = cudaGraphKernelNodeUpdatesApply(&u, 1);
      break;
    }
  }
  if (e != cudaSuccess && c->err == 0) c->err = (int)e;
}

// Q3 updater: thread i writes vals[i] (pinned host memory) into node i's param
__global__ void k_upd_many(const cudaGraphDeviceNode_t* dn, const int* vals, int n, size_t off,
                           const int* enable, int* err) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || !*enable) return;
  int v = vals[i];
  cudaError_t e = cudaGraphKernelNodeSetParam(dn[i], off, &v, sizeof(int));
  if (e != cudaSuccess) atomicCAS(err, 0, (int)e);
}

// Q4
__global__ void k_stamp(int v, int* out, unsigned long long* ts) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    ts[1] = gtimer();
    out[0] = v;
  }
}
// mode 0: no launch, 1: fire-and-forget, 2: tail launch
__global__ void k_launcher(cudaGraphExec_t g, int mode, int* err, unsigned long long* ts) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  ts[0] = gtimer();
  cudaError_t e = cudaSuccess;
  if (mode == 1) e = cudaGraphLaunch(g, cudaStreamGraphFireAndForget);
  if (mode == 2) e = cudaGraphLaunch(g, cudaStreamGraphTailLaunch);
  *err = (int)e;
}
// Q4 extra: indirect dispatch by grid update of a node in another (device-launch) graph
__global__ void k_indirect(cudaGraphDeviceNode_t n, unsigned gx, cudaGraphExec_t g, int mode,
                           int* err) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  cudaError_t e = cudaGraphKernelNodeSetGridDim(n, dim3(gx, 1, 1));
  err[0] = (int)e;
  e = cudaGraphLaunch(g, mode == 1 ? cudaStreamGraphFireAndForget : cudaStreamGraphTailLaunch);
  err[1] = (int)e;
}

// Q5 gates
__global__ void k_gate_enable(const cudaGraphDeviceNode_t* dn, const int* mask, int n, int* err) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cudaError_t e = cudaGraphKernelNodeSetEnabled(dn[i], mask[i] != 0);
  if (e != cudaSuccess) atomicCAS(err, 0, (int)e);
}
__global__ void k_gate_cond(const cudaGraphConditionalHandle* h, const int* mask, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cudaGraphSetConditional(h[i], mask[i] != 0 ? 1u : 0u);
}

static void CUDART_CB host_noop(void*) {}

// ---------------------------------------------------------------------------
// graph helpers
// ---------------------------------------------------------------------------
static cudaError_t addKernel(cudaGraphNode_t* n, cudaGraph_t g, const cudaGraphNode_t* deps,
                             size_t nd, const void* func, dim3 grid, dim3 block, void** args) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = const_cast<void*>(func);
  p.kernel.gridDim = grid;
  p.kernel.blockDim = block;
  p.kernel.sharedMemBytes = 0;
  p.kernel.kernelParams = args;
  p.kernel.extra = nullptr;
  return cudaGraphAddNode(n, g, deps, nullptr, nd, &p);
}

// Opt a kernel node in to device updates and return its device handle.
static cudaError_t makeDevUpd(cudaGraphNode_t n, cudaGraphDeviceNode_t* dn) {
  cudaKernelNodeAttrValue v{};
  v.deviceUpdatableKernelNode.deviceUpdatable = 1;
  cudaError_t e =
      cudaGraphKernelNodeSetAttribute(n, cudaLaunchAttributeDeviceUpdatableKernelNode, &v);
  if (e != cudaSuccess) return e;
  cudaKernelNodeAttrValue o{};
  e = cudaGraphKernelNodeGetAttribute(n, cudaLaunchAttributeDeviceUpdatableKernelNode, &o);
  if (e != cudaSuccess) return e;
  *dn = o.deviceUpdatableKernelNode.devNode ? o.deviceUpdatableKernelNode.devNode
                                            : v.deviceUpdatableKernelNode.devNode;
  return *dn ? cudaSuccess : cudaErrorUnknown;
}

static size_t paramOffset(const void* f, int idx) {
  size_t off = 0, sz = 0;
  CK(cudaFuncGetParamInfo(f, idx, &off, &sz));
  return off;
}

// B target kernel node (what: 0/3 k_param(initv,out), 1 k_grid grid 1, 2 k_mark)
static cudaError_t addB(cudaGraph_t g, int what, int* out, int initv, cudaGraphNode_t* b) {
  int v = initv;
  void* a1[] = {&v, &out};
  void* a2[] = {&out};
  if (what == 1) return addKernel(b, g, nullptr, 0, (const void*)k_grid, dim3(1), dim3(32), a2);
  if (what == 2) return addKernel(b, g, nullptr, 0, (const void*)k_mark, dim3(1), dim3(32), a2);
  return addKernel(b, g, nullptr, 0, (const void*)k_param, dim3(1), dim3(32), a1);
}
static cudaError_t addA(cudaGraph_t g, cudaGraphDeviceNode_t dn, size_t off, Ctl* ctl,
                        cudaGraphNode_t* a) {
  void* args[] = {&dn, &off, &ctl};
  return addKernel(a, g, nullptr, 0, (const void*)k_updater, dim3(1), dim3(32), args);
}

struct Pair {
  cudaGraph_t g = nullptr;
  cudaGraphNode_t a = nullptr, b = nullptr;
  cudaGraphDeviceNode_t dn = nullptr;
};
// graph: A (updater) -> B (device-updatable)
static bool buildPair(Pair& P, int what, int* out, Ctl* ctl, size_t off, bool devupd = true) {
  if (CK(cudaGraphCreate(&P.g, 0))) return false;
  if (CK(addB(P.g, what, out, 1, &P.b))) return false;
  if (devupd && CK(makeDevUpd(P.b, &P.dn))) return false;
  if (CK(addA(P.g, P.dn, off, ctl, &P.a))) return false;
  if (CK(cudaGraphAddDependencies(P.g, &P.a, &P.b, nullptr, 1))) return false;
  return true;
}

struct Bufs {
  int* out = nullptr;
  Ctl* ctl = nullptr;
  bool ok = false;
  Bufs() { ok = !CK(cudaMalloc(&out, 64)) && !CK(cudaMalloc(&ctl, sizeof(Ctl))); }
  ~Bufs() {
    if (out) cudaFree(out);
    if (ctl) cudaFree(ctl);
  }
  void resetCtl(int what, int mode = 1) {
    Ctl c{0, mode, 0, what};
    CK(cudaMemcpy(ctl, &c, sizeof c, cudaMemcpyHostToDevice));
  }
  void setMode(int mode) { CK(cudaMemcpy(&ctl->mode, &mode, sizeof(int), cudaMemcpyHostToDevice)); }
};

struct Seen {
  int v0 = -999, v1 = -999, derr = 0;
  cudaError_t lerr = cudaSuccess;
};
// poison out, launch exec once on s, return what B wrote and the updater's device error
static Seen launchOnce(cudaGraphExec_t e, cudaStream_t s, Bufs& B, bool upload = false) {
  Seen r;
  CK(cudaMemset(B.out, 0xFF, 8));
  CK(cudaMemset(B.out + 1, 0, 4));
  if (upload) CK(cudaGraphUpload(e, s));
  r.lerr = TRY(cudaGraphLaunch(e, s));
  TRY(cudaStreamSynchronize(s));
  int h[2] = {-999, -999};
  CK(cudaMemcpy(h, B.out, 8, cudaMemcpyDeviceToHost));
  Ctl c{};
  CK(cudaMemcpy(&c, B.ctl, sizeof c, cudaMemcpyDeviceToHost));
  r.v0 = h[0];
  r.v1 = h[1];
  r.derr = c.err;
  return r;
}
static std::string seenStr(int what, const Seen& s) {
  char buf[128];
  if (s.lerr != cudaSuccess) {
    std::snprintf(buf, sizeof buf, "launch failed %s", es(s.lerr).c_str());
    return buf;
  }
  if (what == 1)
    std::snprintf(buf, sizeof buf, "grid=%d/blocks=%d", s.v0, s.v1);
  else if (what == 2)
    std::snprintf(buf, sizeof buf, "%s", s.v0 == 7 ? "ran" : s.v0 == -1 ? "skipped" : "??");
  else
    std::snprintf(buf, sizeof buf, "%d", s.v0);
  return buf;
}

static cudaStream_t g_s = nullptr;

// ===========================================================================
// Q1: same-launch visibility of device updates
// ===========================================================================
static void q1() {
  const char* names[4] = {"param", "grid", "enable", "param_via_UpdatesApply"};
  size_t off = paramOffset((const void*)k_param, 0);
  std::printf("  (k_param param 0 offset = %zu)\n", off);
  for (int what = 0; what < 4; ++what) {
    Bufs B;
    if (!B.ok) continue;
    B.resetCtl(what, 1);
    Pair P;
    if (!buildPair(P, what, B.out, B.ctl, off)) {
      ANS("Q1 %s visible_same_launch: ERROR (graph build failed, see above)", names[what]);
      continue;
    }
    cudaGraphExec_t ex = nullptr;
    if (CK(cudaGraphInstantiate(&ex, P.g, 0))) {
      ANS("Q1 %s visible_same_launch: ERROR (instantiate failed)", names[what]);
      cudaGraphDestroy(P.g);
      continue;
    }
    CK(cudaGraphUpload(ex, g_s));
    CK(cudaStreamSynchronize(g_s));
    Seen s[4];
    for (int L = 0; L < 4; ++L) {
      if (L == 3) B.setMode(0);  // launch 4: updater counts but does not update
      s[L] = launchOnce(ex, g_s, B);
    }
    std::string detail = "B saw L1=" + seenStr(what, s[0]) + " L2=" + seenStr(what, s[1]) +
                         " L3=" + seenStr(what, s[2]) + " L4(no update)=" + seenStr(what, s[3]);
    const char* verdict = "UNCLEAR";
    std::string expect;
    if (what == 0 || what == 3) {
      expect = "initial 1; A sets 101,102,103 in L1..L3";
      if (s[0].v0 == 101 && s[1].v0 == 102 && s[2].v0 == 103)
        verdict = "yes";
      else if (s[0].v0 == 1 && s[1].v0 == 101 && s[2].v0 == 102)
        verdict = "no, only at the next launch";
    } else if (what == 1) {
      expect = "initial grid 1; A sets 3,4,5 in L1..L3";
      if (s[0].v0 == 3 && s[0].v1 == 3 && s[1].v0 == 4 && s[2].v0 == 5)
        verdict = "yes";
      else if (s[0].v0 == 1 && s[1].v0 == 3 && s[2].v0 == 4)
        verdict = "no, only at the next launch";
    } else {
      expect = "initially enabled; A sets disabled,enabled,disabled in L1..L3";
      if (s[0].v0 == -1 && s[1].v0 == 7 && s[2].v0 == -1)
        verdict = "yes";
      else if (s[0].v0 == 7 && s[1].v0 == -1 && s[2].v0 == 7)
        verdict = "no, only at the next launch";
    }
    ANS("Q1 %s visible_same_launch: %s (%s; %s; device err %s)", names[what], verdict,
        detail.c_str(), expect.c_str(), esl((cudaError_t)s[3].derr).c_str());
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(P.g));
  }
}

// ===========================================================================
// Q2: what is forbidden
// ===========================================================================
static std::string runTwice(cudaGraphExec_t ex, Bufs& B, bool upload = true) {
  if (upload) TRY(cudaGraphUpload(ex, g_s));
  Seen a = launchOnce(ex, g_s, B);
  Seen b = launchOnce(ex, g_s, B);
  char buf[320];
  std::snprintf(buf, sizeof buf, "B saw L1=%s L2=%s (101/102 = same launch, 1/101 = next), device err %s",
                seenStr(0, a).c_str(), seenStr(0, b).c_str(), es((cudaError_t)b.derr).c_str());
  return buf;
}

static void q2(const std::string& part) {
  size_t off = paramOffset((const void*)k_param, 0);

  // (a) instantiate flags: 0 vs DeviceLaunch
  if (part == "a") {
    Bufs B;
    B.resetCtl(0);
    Pair P;
    if (buildPair(P, 0, B.out, B.ctl, off)) {
      cudaGraphExec_t ex = nullptr;
      cudaError_t e = TRY(cudaGraphInstantiate(&ex, P.g, 0));
      std::string r = e == cudaSuccess ? runTwice(ex, B) : "";
      ANS("Q2 needs_DeviceLaunch_flag: %s (flags=0 instantiate: %s; %s)",
          e == cudaSuccess ? "no" : "yes?", esl(e).c_str(), r.c_str());
      if (ex) CK(cudaGraphExecDestroy(ex));
      CK(cudaGraphDestroy(P.g));
    }
  }
  if (part == "a") {
    Bufs B;
    B.resetCtl(0);
    Pair P;
    if (buildPair(P, 0, B.out, B.ctl, off)) {
      cudaGraphExec_t ex = nullptr;
      cudaError_t e = TRY(cudaGraphInstantiate(&ex, P.g, cudaGraphInstantiateFlagDeviceLaunch));
      std::string r = e == cudaSuccess ? runTwice(ex, B) : "";
      ANS("Q2 with_DeviceLaunch_flag: %s (instantiate: %s; host launch: %s)",
          e == cudaSuccess ? "allowed" : "refused", esl(e).c_str(), r.c_str());
      if (ex) CK(cudaGraphExecDestroy(ex));
      CK(cudaGraphDestroy(P.g));
    }
  }
  // (b) instantiate twice, (c) clone
  if (part == "b") {
    Bufs B;
    B.resetCtl(0);
    Pair P;
    if (buildPair(P, 0, B.out, B.ctl, off)) {
      cudaGraphExec_t ex1 = nullptr, ex2 = nullptr, ex3 = nullptr;
      CK(cudaGraphInstantiate(&ex1, P.g, 0));
      cudaError_t e2 = TRY(cudaGraphInstantiate(&ex2, P.g, 0));
      ANS("Q2 instantiate_twice: %s (second cudaGraphInstantiate while first exists: %s)",
          e2 == cudaSuccess ? "allowed" : "refused", esl(e2).c_str());
      if (ex2) CK(cudaGraphExecDestroy(ex2));
      // clone while ex1 exists
      cudaGraph_t cl = nullptr;
      cudaError_t ec = TRY(cudaGraphClone(&cl, P.g));
      std::string extra;
      if (ec == cudaSuccess) {
        cudaGraphNode_t cb = nullptr;
        cudaError_t ef = TRY(cudaGraphNodeFindInClone(&cb, P.b, cl));
        cudaKernelNodeAttrValue o{};
        if (!ef)
          TRY(cudaGraphKernelNodeGetAttribute(cb, cudaLaunchAttributeDeviceUpdatableKernelNode, &o));
        cudaGraphExec_t exc = nullptr;
        cudaError_t ei = TRY(cudaGraphInstantiate(&exc, cl, 0));
        char buf[400];
        std::snprintf(buf, sizeof buf,
                      "; clone's B deviceUpdatable=%d devNode %s original; instantiate clone while original exec exists: %s",
                      o.deviceUpdatableKernelNode.deviceUpdatable,
                      o.deviceUpdatableKernelNode.devNode == P.dn ? "==" : "!=", esl(ei).c_str());
        extra = buf;
        if (exc) CK(cudaGraphExecDestroy(exc));
        CK(cudaGraphDestroy(cl));
      }
      ANS("Q2 clone: %s (cudaGraphClone: %s%s)", ec == cudaSuccess ? "allowed" : "refused",
          esl(ec).c_str(), extra.c_str());
      if (ex1) CK(cudaGraphExecDestroy(ex1));
      cudaError_t e3 = TRY(cudaGraphInstantiate(&ex3, P.g, 0));
      ANS("Q2 reinstantiate_after_destroy: %s (%s)", e3 == cudaSuccess ? "allowed" : "refused",
          esl(e3).c_str());
      if (ex3) CK(cudaGraphExecDestroy(ex3));
      CK(cudaGraphDestroy(P.g));
    }
  }
  // (d1) child graph containing a device-updatable node (default = clone ownership).
  // d1 = as first asked; d1v1..d1v4 = variants that isolate a crash seen at teardown:
  //   v1: no instantiate, destroy parent then child source graph
  //   v2: instantiate + run, destroy child source graph first, then parent
  //   v3: same as d1 but B is a plain (not device-updatable) node
  //   v4: no instantiate, destroy child source graph first, then parent
  if (part.rfind("d1", 0) == 0) {
    int variant = part.size() > 3 ? part[3] - '0' : 0;
    bool inst = !(variant == 1 || variant == 4);
    bool childFirst = (variant == 2 || variant == 4);
    bool devupd = variant != 3;
    {
      Bufs B;
      B.resetCtl(0);
      cudaGraph_t C = nullptr, Pg = nullptr;
      cudaGraphNode_t b = nullptr, a = nullptr, cn = nullptr;
      cudaGraphDeviceNode_t dn = nullptr;
      CK(cudaGraphCreate(&C, 0));
      CK(cudaGraphCreate(&Pg, 0));
      CK(addB(C, 0, B.out, 1, &b));
      if (devupd) CK(makeDevUpd(b, &dn));
      CK(addA(Pg, dn, off, B.ctl, &a));
      cudaError_t e = TRY(cudaGraphAddChildGraphNode(&cn, Pg, &a, 1, C));
      std::string r = "not launched";
      cudaError_t ei = cudaErrorNotYetImplemented;
      if (!e && inst) {
        cudaGraphExec_t ex = nullptr;
        ei = TRY(cudaGraphInstantiate(&ex, Pg, 0));
        if (!ei) {
          if (devupd) r = runTwice(ex, B);
          CK(cudaGraphExecDestroy(ex));
        }
      }
      if (variant == 0)
        ANS("Q2 in_child_graph(clone ownership): %s (cudaGraphAddChildGraphNode: %s; instantiate: %s; %s)",
            e ? "refused at add" : ei ? "refused at instantiate" : "allowed", esl(e).c_str(),
            e ? "-" : esl(ei).c_str(), r.c_str());
      std::printf("  (d1 variant %d: devupd=%d instantiated=%d; destroying %s first)\n", variant, (int)devupd,
                  (int)inst, childFirst ? "the child's source graph" : "the parent");
      if (childFirst) {
        CK(cudaGraphDestroy(C));
        CK(cudaGraphDestroy(Pg));
      } else {
        CK(cudaGraphDestroy(Pg));
        CK(cudaGraphDestroy(C));
      }
      mark("graph destroys returned; next: cudaFree of the buffers", __LINE__);
    }
    mark("after cudaFree of the buffers", __LINE__);
    ANS("Q2 child_clone_teardown variant %d (devupd=%d, instantiated=%d, %s destroyed first): completed without crash",
        variant, (int)devupd, (int)inst, childFirst ? "child source graph" : "parent");
  }
  // (d2) plain node embedded as child, then opted in inside the parent's child graph
  if (part == "d2") {
    Bufs B;
    B.resetCtl(0);
    cudaGraph_t C = nullptr, Pg = nullptr, emb = nullptr;
    cudaGraphNode_t b = nullptr, a = nullptr, cn = nullptr;
    cudaGraphDeviceNode_t dn = nullptr;
    CK(cudaGraphCreate(&C, 0));
    CK(cudaGraphCreate(&Pg, 0));
    CK(addB(C, 0, B.out, 1, &b));
    CK(cudaGraphAddChildGraphNode(&cn, Pg, nullptr, 0, C));
    CK(cudaGraphChildGraphNodeGetGraph(cn, &emb));
    cudaGraphNode_t eb = nullptr;
    size_t nn = 1;
    CK(cudaGraphGetNodes(emb, &eb, &nn));
    cudaError_t e = TRY(makeDevUpd(eb, &dn));
    std::string r;
    cudaError_t ei = cudaErrorNotYetImplemented;
    if (!e) {
      CK(addA(Pg, dn, off, B.ctl, &a));
      CK(cudaGraphAddDependencies(Pg, &a, &cn, nullptr, 1));
      cudaGraphExec_t ex = nullptr;
      ei = TRY(cudaGraphInstantiate(&ex, Pg, 0));
      if (!ei) {
        r = runTwice(ex, B);
        CK(cudaGraphExecDestroy(ex));
      }
    }
    ANS("Q2 in_child_graph(opt in after embedding): %s (set attribute on embedded node: %s; instantiate: %s; %s)",
        e ? "refused at opt-in" : ei ? "refused at instantiate" : "allowed", esl(e).c_str(),
        e ? "-" : esl(ei).c_str(), r.c_str());
    CK(cudaGraphDestroy(Pg));
    CK(cudaGraphDestroy(C));
  }
  // (d3) child graph with move ownership
  if (part == "d3") {
    Bufs B;
    B.resetCtl(0);
    cudaGraph_t C = nullptr, Pg = nullptr;
    cudaGraphNode_t b = nullptr, a = nullptr, cn = nullptr;
    cudaGraphDeviceNode_t dn = nullptr;
    CK(cudaGraphCreate(&C, 0));
    CK(cudaGraphCreate(&Pg, 0));
    CK(addB(C, 0, B.out, 1, &b));
    CK(makeDevUpd(b, &dn));
    CK(addA(Pg, dn, off, B.ctl, &a));
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeGraph;
    p.graph.graph = C;
    p.graph.ownership = cudaGraphChildGraphOwnershipMove;
    cudaError_t e = TRY(cudaGraphAddNode(&cn, Pg, &a, nullptr, 1, &p));
    std::string r;
    cudaError_t ei = cudaErrorNotYetImplemented;
    if (!e) {
      cudaGraphExec_t ex = nullptr;
      ei = TRY(cudaGraphInstantiate(&ex, Pg, 0));
      if (!ei) {
        r = runTwice(ex, B);
        CK(cudaGraphExecDestroy(ex));
      }
    }
    ANS("Q2 in_child_graph(move ownership): %s (cudaGraphAddNode child/Move: %s; instantiate: %s; %s)",
        e ? "refused at add" : ei ? "refused at instantiate" : "allowed", esl(e).c_str(),
        e ? "-" : esl(ei).c_str(), r.c_str());
    CK(cudaGraphDestroy(Pg));
    if (e) CK(cudaGraphDestroy(C));  // on success the parent owns C
  }
  // (e) inside a conditional IF body
  if (part == "e") {
    Bufs B;
    B.resetCtl(0);
    cudaGraph_t Pg = nullptr;
    CK(cudaGraphCreate(&Pg, 0));
    cudaGraphConditionalHandle h = 0;
    cudaError_t eh = TRY(cudaGraphConditionalHandleCreate(&h, Pg, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = cudaGraphCondTypeIf;
    p.conditional.size = 1;
    cudaGraphNode_t cn = nullptr, b = nullptr, a = nullptr;
    cudaError_t ec = eh ? eh : TRY(cudaGraphAddNode(&cn, Pg, nullptr, nullptr, 0, &p));
    cudaError_t eb = cudaErrorNotYetImplemented, ei = cudaErrorNotYetImplemented;
    std::string r;
    if (!ec) {
      cudaGraph_t body = p.conditional.phGraph_out[0];
      CK(addB(body, 0, B.out, 1, &b));
      cudaGraphDeviceNode_t dn = nullptr;
      eb = TRY(makeDevUpd(b, &dn));
      if (!eb) {
        CK(addA(Pg, dn, off, B.ctl, &a));
        CK(cudaGraphAddDependencies(Pg, &a, &cn, nullptr, 1));
        cudaGraphExec_t ex = nullptr;
        ei = TRY(cudaGraphInstantiate(&ex, Pg, 0));
        if (!ei) {
          r = runTwice(ex, B);
          CK(cudaGraphExecDestroy(ex));
        }
      }
    }
    ANS("Q2 in_conditional_body: %s (conditional node: %s; opt-in of body node: %s; instantiate: %s; %s)",
        ec ? "could not build" : eb ? "refused at opt-in" : ei ? "refused at instantiate" : "allowed",
        esl(ec).c_str(), ec ? "-" : esl(eb).c_str(), (ec || eb) ? "-" : esl(ei).c_str(),
        r.c_str());
    CK(cudaGraphDestroy(Pg));
  }
  // (f) host-side cudaGraphExecKernelNodeSetParams on the node after instantiate
  if (part == "f") {
    Bufs B;
    B.resetCtl(0, 1);
    Pair P;
    if (buildPair(P, 0, B.out, B.ctl, off)) {
      cudaGraphExec_t ex = nullptr;
      CK(cudaGraphInstantiate(&ex, P.g, 0));
      CK(cudaGraphUpload(ex, g_s));
      Seen s1 = launchOnce(ex, g_s, B);  // device update k=1 -> 101
      B.setMode(0);                      // from now on the updater does not update
      int v = 50;
      int* o = B.out;
      void* args[] = {&v, &o};
      cudaKernelNodeParams kp{};
      kp.func = (void*)k_param;
      kp.gridDim = dim3(1);
      kp.blockDim = dim3(32);
      kp.kernelParams = args;
      cudaError_t e = TRY(cudaGraphExecKernelNodeSetParams(ex, P.b, &kp));
      Seen s2 = launchOnce(ex, g_s, B);        // without upload
      Seen s3 = launchOnce(ex, g_s, B, true);  // after cudaGraphUpload
      B.setMode(1);
      Seen s4 = launchOnce(ex, g_s, B);  // device update again, k=4 -> 104
      Seen s5 = launchOnce(ex, g_s, B);  // k=5 -> 105
      ANS("Q2 host_ExecKernelNodeSetParams: %s (%s; before: B saw %s after a device update; host sets 50 -> "
          "launch w/o upload saw %s, after cudaGraphUpload saw %s; device updates resumed: saw %s then %s, device err %s)",
          e ? "refused" : "allowed", esl(e).c_str(), seenStr(0, s1).c_str(), seenStr(0, s2).c_str(),
          seenStr(0, s3).c_str(), seenStr(0, s4).c_str(), seenStr(0, s5).c_str(),
          es((cudaError_t)s5.derr).c_str());
      // host-side enable/disable of the same node
      B.setMode(0);
      cudaError_t en = TRY(cudaGraphNodeSetEnabled(ex, P.b, 0));
      Seen s6 = launchOnce(ex, g_s, B, true);
      cudaError_t en2 = TRY(cudaGraphNodeSetEnabled(ex, P.b, 1));
      Seen s7 = launchOnce(ex, g_s, B, true);
      ANS("Q2 host_NodeSetEnabled: %s (disable: %s -> B wrote %d (-1 = skipped); enable: %s -> B wrote %d)",
          (en || en2) ? "refused" : "allowed", esl(en).c_str(), s6.v0, esl(en2).c_str(), s7.v0);
      CK(cudaGraphExecDestroy(ex));
      CK(cudaGraphDestroy(P.g));
    }
  }
  // (g) cudaGraphExecUpdate from a topologically identical graph
  if (part == "g") {
    Bufs B;
    B.resetCtl(0);
    Pair P, Q, R;
    if (buildPair(P, 0, B.out, B.ctl, off) && buildPair(Q, 0, B.out, B.ctl, off) &&
        buildPair(R, 0, B.out, B.ctl, off, /*devupd=*/false)) {
      cudaGraphExec_t ex = nullptr;
      CK(cudaGraphInstantiate(&ex, P.g, 0));
      cudaGraphExecUpdateResultInfo info{};
      cudaError_t e = TRY(cudaGraphExecUpdate(ex, Q.g, &info));
      int r1 = (int)info.result;
      info = cudaGraphExecUpdateResultInfo{};
      cudaError_t e2 = TRY(cudaGraphExecUpdate(ex, R.g, &info));
      int r2 = (int)info.result;
      ANS("Q2 ExecUpdate_identical: %s (from identical device-updatable graph: %s result=%d; from same "
          "topology with plain B: %s result=%d)",
          e ? "refused" : "allowed", esl(e).c_str(), r1, esl(e2).c_str(), r2);
      CK(cudaGraphExecDestroy(ex));
      // and the other way: exec of a plain graph updated from a device-updatable graph
      cudaGraphExec_t exr = nullptr;
      CK(cudaGraphInstantiate(&exr, R.g, 0));
      info = cudaGraphExecUpdateResultInfo{};
      cudaError_t e3 = TRY(cudaGraphExecUpdate(exr, Q.g, &info));
      ANS("Q2 ExecUpdate_plain_exec_from_devupd_graph: %s (%s result=%d)", e3 ? "refused" : "allowed",
          esl(e3).c_str(), (int)info.result);
      CK(cudaGraphExecDestroy(exr));
    }
    if (P.g) CK(cudaGraphDestroy(P.g));
    if (Q.g) CK(cudaGraphDestroy(Q.g));
    if (R.g) CK(cudaGraphDestroy(R.g));
  }
  // (h) UseNodePriority
  if (part == "h") {
    Bufs B;
    B.resetCtl(0);
    Pair P;
    if (buildPair(P, 0, B.out, B.ctl, off)) {
      cudaGraphExec_t ex = nullptr;
      cudaError_t e = TRY(cudaGraphInstantiate(&ex, P.g, cudaGraphInstantiateFlagUseNodePriority));
      std::string r = e == cudaSuccess ? runTwice(ex, B) : "";
      ANS("Q2 UseNodePriority: %s (instantiate: %s; %s)", e ? "refused" : "allowed", esl(e).c_str(),
          r.c_str());
      if (ex) CK(cudaGraphExecDestroy(ex));
      CK(cudaGraphDestroy(P.g));
    }
  }
}

// ===========================================================================
// Q3: cost of 1,000 per-frame parameter updates
// ===========================================================================
static void q3() {
  const int N = 1000, WARM = 5, FR = 20;
  size_t off = paramOffset((const void*)k_small, 0);
  int* out = nullptr;
  int* vals_h = nullptr;
  int *vals_d = nullptr, *enable = nullptr, *err = nullptr;
  cudaGraphDeviceNode_t* dn_d = nullptr;
  if (CK(cudaMalloc(&out, N * sizeof(int))) || CK(cudaMalloc(&enable, 4)) || CK(cudaMalloc(&err, 4)) ||
      CK(cudaMalloc(&dn_d, N * sizeof(cudaGraphDeviceNode_t))) ||
      CK(cudaHostAlloc(&vals_h, N * sizeof(int), cudaHostAllocMapped)) ||
      CK(cudaHostGetDevicePointer((void**)&vals_d, vals_h, 0))) {
    ANS("Q3 cost: ERROR (allocation)");
    return;
  }
  int one = 1;
  CK(cudaMemcpy(enable, &one, 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(err, 0, 4));
  for (int i = 0; i < N; ++i) vals_h[i] = i;

  // --- graph D: updater -> chain of N device-updatable nodes
  cudaGraph_t gD = nullptr;
  cudaGraphExec_t eD = nullptr;
  std::vector<cudaGraphNode_t> nD(N);
  std::vector<cudaGraphDeviceNode_t> dn(N);
  bool okD = !CK(cudaGraphCreate(&gD, 0));
  cudaGraphNode_t upd = nullptr;
  if (okD) {
    int n = N;
    void* ua[] = {&dn_d, &vals_d, &n, &off, &enable, &err};
    okD = !CK(addKernel(&upd, gD, nullptr, 0, (const void*)k_upd_many, dim3((N + 255) / 256),
                        dim3(256), ua));
  }
  int devupdFailAt = -1;
  cudaError_t devupdErr = cudaSuccess;
  for (int i = 0; okD && i < N; ++i) {
    int v = -5, ii = i;
    void* a[] = {&v, &ii, &out};
    cudaGraphNode_t dep = i ? nD[i - 1] : upd;
    if (CK(addKernel(&nD[i], gD, &dep, 1, (const void*)k_small, dim3(1), dim3(32), a))) {
      okD = false;
      break;
    }
    devupdErr = makeDevUpd(nD[i], &dn[i]);
    if (devupdErr) {
      devupdFailAt = i;
      TRY(devupdErr);
      okD = false;
    }
  }
  if (okD) {
    CK(cudaMemcpy(dn_d, dn.data(), N * sizeof(cudaGraphDeviceNode_t), cudaMemcpyHostToDevice));
    auto t0 = clk::now();
    okD = !CK(cudaGraphInstantiate(&eD, gD, 0));
    auto t1 = clk::now();
    if (okD) okD = !CK(cudaGraphUpload(eD, g_s)) && !CK(cudaStreamSynchronize(g_s));
    std::printf("  (graph D: %d device-updatable nodes + updater, instantiate %.0f us)\n", N,
                us_since(t0, t1));
  } else {
    std::printf("  (graph D could not be built; device-updatable opt-in failed at node %d: %s)\n",
                devupdFailAt, esl(devupdErr).c_str());
  }

  // --- graph H: plain chain of N nodes
  cudaGraph_t gH = nullptr;
  cudaGraphExec_t eH = nullptr;
  std::vector<cudaGraphNode_t> nH(N);
  bool okH = !CK(cudaGraphCreate(&gH, 0));
  for (int i = 0; okH && i < N; ++i) {
    int v = -5, ii = i;
    void* a[] = {&v, &ii, &out};
    okH = !CK(addKernel(&nH[i], gH, i ? &nH[i - 1] : nullptr, i ? 1 : 0, (const void*)k_small,
                        dim3(1), dim3(32), a));
  }
  if (okH) okH = !CK(cudaGraphInstantiate(&eH, gH, 0)) && !CK(cudaGraphUpload(eH, g_s));
  CK(cudaStreamSynchronize(g_s));

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<int> hout(N);

  // variant: 0 = device updater, 1 = host SetParams, 2 = plain H, 3 = graph D with updater disabled
  double hostMed[4] = {-1, -1, -1, -1}, gpuMed[4] = {-1, -1, -1, -1}, setMed = -1;
  std::string verify[4];
  for (int var = 0; var < 4; ++var) {
    bool usesD = (var == 0 || var == 3);
    if ((usesD && !okD) || (!usesD && !okH)) continue;
    cudaGraphExec_t ex = usesD ? eD : eH;
    int en = var == 3 ? 0 : 1;
    CK(cudaMemcpy(enable, &en, 4, cudaMemcpyHostToDevice));
    std::vector<double> host, gpu, setp;
    int lastF = 0;
    for (int f = 0; f < WARM + FR; ++f) {
      int base = (var + 1) * 1000000 + f * 1000;
      auto t0 = clk::now();
      if (var == 0) {
        for (int i = 0; i < N; ++i) vals_h[i] = base + i;
      } else if (var == 1) {
        for (int i = 0; i < N; ++i) {
          int v = base + i, ii = i;
          void* a[] = {&v, &ii, &out};
          cudaKernelNodeParams kp{};
          kp.func = (void*)k_small;
          kp.gridDim = dim3(1);
          kp.blockDim = dim3(32);
          kp.kernelParams = a;
          if (cudaGraphExecKernelNodeSetParams(ex, nH[i], &kp) != cudaSuccess) {
            CK(cudaGraphExecKernelNodeSetParams(ex, nH[i], &kp));
            break;
          }
        }
      }
      auto tm = clk::now();
      CK(cudaEventRecord(e0, g_s));  // after the host work, so GPU time is launch -> completion
      auto tl = clk::now();
      cudaError_t le = cudaGraphLaunch(ex, g_s);
      auto t1 = clk::now();
      CK(le);
      CK(cudaEventRecord(e1, g_s));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (f >= WARM) {
        host.push_back(us_since(t0, tm) + us_since(tl, t1));
        setp.push_back(us_since(t0, tm));
        gpu.push_back(ms * 1000.0);
      }
      lastF = f;
    }
    hostMed[var] = med(host);
    gpuMed[var] = med(gpu);
    if (var == 1) setMed = med(setp);
    CK(cudaMemcpy(hout.data(), out, N * sizeof(int), cudaMemcpyDeviceToHost));
    int cur = 0, prev = 0, other = 0;
    int base = (var + 1) * 1000000 + lastF * 1000, pbase = base - 1000;
    for (int i = 0; i < N; ++i) {
      if (hout[i] == base + i)
        ++cur;
      else if (hout[i] == pbase + i)
        ++prev;
      else
        ++other;
    }
    char b[160];
    std::snprintf(b, sizeof b, "last frame: %d/%d nodes saw this frame's value, %d the previous frame's, %d other",
                  cur, N, prev, other);
    verify[var] = b;
  }
  int derr = 0;
  CK(cudaMemcpy(&derr, err, 4, cudaMemcpyDeviceToHost));
  ANS("Q3 host_us_per_frame (median of %d after %d warm-ups): device-updater(write 1000 pinned ints + launch) %.1f | "
      "host 1000x ExecKernelNodeSetParams + launch %.1f (SetParams part %.1f) | plain launch %.1f | devupd graph, updater idle %.1f",
      FR, WARM, hostMed[0], hostMed[1], setMed, hostMed[2], hostMed[3]);
  ANS("Q3 gpu_us_per_launch: device-updater %.1f | host-SetParams %.1f | plain %.1f | devupd graph, updater idle %.1f",
      gpuMed[0], gpuMed[1], gpuMed[2], gpuMed[3]);
  if (hostMed[2] > 0 && gpuMed[2] > 0)
    ANS("Q3 ratios vs plain: host time device-updater %.2fx, host-SetParams %.2fx; gpu time device-updater %.2fx, "
        "host-SetParams %.2fx; device-updater/host-SetParams host time %.3fx",
        hostMed[0] / hostMed[2], hostMed[1] / hostMed[2], gpuMed[0] / gpuMed[2], gpuMed[1] / gpuMed[2],
        hostMed[1] > 0 ? hostMed[0] / hostMed[1] : -1.0);
  ANS("Q3 correctness: device-updater %s; host-SetParams %s; device err %s", verify[0].c_str(),
      verify[1].c_str(), es((cudaError_t)derr).c_str());

  if (eD) CK(cudaGraphExecDestroy(eD));
  if (eH) CK(cudaGraphExecDestroy(eH));
  if (gD) CK(cudaGraphDestroy(gD));
  if (gH) CK(cudaGraphDestroy(gH));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  cudaFree(out);
  cudaFree(enable);
  cudaFree(err);
  cudaFree(dn_d);
  cudaFreeHost(vals_h);
}

// ===========================================================================
// Q4: device graph launch
// ===========================================================================
static cudaError_t oneKernelGraph(cudaGraph_t* g, const void* f, void** args, cudaGraphNode_t* n = nullptr) {
  cudaError_t e = cudaGraphCreate(g, 0);
  if (e) return e;
  cudaGraphNode_t tmp;
  return addKernel(n ? n : &tmp, *g, nullptr, 0, f, dim3(1), dim3(32), args);
}

static void q4(const std::string& part) {
  int* out = nullptr;
  int* err = nullptr;
  unsigned long long* ts = nullptr;
  if (CK(cudaMalloc(&out, 64)) || CK(cudaMalloc(&err, 16)) || CK(cudaMalloc(&ts, 16))) return;

  // target graph G1 (device-launch instantiated, uploaded)
  int V = 4242;
  void* ga[] = {&V, &out, &ts};
  cudaGraph_t g1 = nullptr;
  cudaGraphExec_t x1 = nullptr;
  if (CK(oneKernelGraph(&g1, (const void*)k_stamp, ga)) ||
      CK(cudaGraphInstantiate(&x1, g1, cudaGraphInstantiateFlagDeviceLaunch)) ||
      CK(cudaGraphUpload(x1, g_s)) || CK(cudaStreamSynchronize(g_s))) {
    ANS("Q4 device_launch: ERROR (could not build/instantiate/upload the target graph)");
    return;
  }
  auto readOut = [&](int* o, int* e) {
    CK(cudaMemcpy(o, out, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(e, err, 4, cudaMemcpyDeviceToHost));
  };
  auto poison = [&]() {
    CK(cudaMemset(out, 0xFF, 4));
    CK(cudaMemset(err, 0xFF, 4));
  };

  // launcher graphs: mode x instantiate flag
  const char* modeName[3] = {"none", "fire_and_forget", "tail_launch"};
  cudaGraphExec_t L[3][2] = {};  // [mode][0: flags 0, 1: DeviceLaunch]
  cudaGraph_t Lg[3][2] = {};
  for (int mode = 0; mode < 3; ++mode)
    for (int fl = 0; fl < 2; ++fl) {
      int m = mode;
      void* la[] = {&x1, &m, &err, &ts};
      if (CK(oneKernelGraph(&Lg[mode][fl], (const void*)k_launcher, la))) continue;
      if (CK(cudaGraphInstantiate(&L[mode][fl], Lg[mode][fl], fl ? cudaGraphInstantiateFlagDeviceLaunch : 0)))
        L[mode][fl] = nullptr;
      else if (fl)
        CK(cudaGraphUpload(L[mode][fl], g_s));
    }
  CK(cudaStreamSynchronize(g_s));
  for (int mode = 1; mode < 3 && part == "a"; ++mode) {
    std::string parts;
    for (int fl = 0; fl < 2; ++fl) {
      if (!L[mode][fl]) continue;
      poison();
      cudaError_t le = TRY(cudaGraphLaunch(L[mode][fl], g_s));
      cudaError_t se = TRY(cudaStreamSynchronize(g_s));
      int o = -9, e = -9;
      readOut(&o, &e);
      char b[512];
      std::snprintf(b, sizeof b, "%slauncher graph instantiated with %s: host launch %s, sync %s, device cudaGraphLaunch -> %s, target wrote %d (%s)",
                    parts.empty() ? "" : "; ", fl ? "DeviceLaunch" : "flags=0", es(le).c_str(), es(se).c_str(),
                    e == -1 ? "(not reached)" : es((cudaError_t)e).c_str(), o, o == V ? "ran" : "did not run");
      parts += b;
    }
    ANS("Q4 %s: %s", modeName[mode], parts.c_str());
  }
  for (int mode = 1; mode < 3 && part == "e"; ++mode) {
    // launcher kernel outside any graph
    poison();
    k_launcher<<<1, 32, 0, g_s>>>(x1, mode, err, ts);
    cudaError_t le = TRY(cudaGetLastError());
    cudaError_t se = TRY(cudaStreamSynchronize(g_s));
    int o = -9, e = -9;
    readOut(&o, &e);
    ANS("Q4 %s from a plain stream kernel (no graph): launch %s, sync %s, device cudaGraphLaunch -> %s, target wrote %d (%d = ran)",
        modeName[mode], es(le).c_str(), es(se).c_str(), e == -1 ? "(not reached)" : es((cudaError_t)e).c_str(), o, V);
  }

  // latency, median of 50 after 5 warm-ups
  if (part == "b") {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    auto bench = [&](cudaGraphExec_t ex, double* gpu, double* host, double* dts) {
      std::vector<double> G, H, D;
      for (int i = 0; i < 55; ++i) {
        CK(cudaMemset(ts, 0, 16));
        CK(cudaEventRecord(a, g_s));
        auto t0 = clk::now();
        cudaError_t le = cudaGraphLaunch(ex, g_s);
        cudaError_t se = cudaStreamSynchronize(g_s);
        auto t1 = clk::now();
        CK(le);
        CK(se);
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        // second, event-only measurement (the host-wall one above includes the sync)
        CK(cudaEventRecord(a, g_s));
        CK(cudaGraphLaunch(ex, g_s));
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        unsigned long long t[2] = {0, 0};
        CK(cudaMemcpy(t, ts, 16, cudaMemcpyDeviceToHost));
        if (i >= 5) {
          G.push_back(ms * 1000.0);
          H.push_back(us_since(t0, t1));
          D.push_back((t[0] && t[1]) ? (double)(long long)(t[1] - t[0]) / 1000.0 : -1.0);
        }
      }
      *gpu = med(G);
      *host = med(H);
      if (dts) *dts = med(D);
    };
    double hg = -1, hh = -1, fg = -1, fh = -1, fd = -1, ng = -1, nh = -1, tg = -1, th = -1, td = -1;
    bench(x1, &hg, &hh, nullptr);
    int fl = L[1][1] ? 1 : 0;
    std::printf("  (latency launcher graphs instantiated with %s)\n", fl ? "DeviceLaunch" : "flags=0");
    if (L[1][fl]) bench(L[1][fl], &fg, &fh, &fd);
    if (L[0][fl]) bench(L[0][fl], &ng, &nh, nullptr);
    if (L[2][fl]) bench(L[2][fl], &tg, &th, &td);
    ANS("Q4 latency_us (median of 50): host cudaGraphLaunch(G1): gpu(event) %.2f, host launch+sync %.2f | "
        "launcher graph + device fire-and-forget G1: gpu %.2f, host %.2f, launcher->G1 kernel start (globaltimer) %.2f | "
        "launcher graph alone (no device launch): gpu %.2f, host %.2f | launcher + tail launch G1: gpu %.2f, host %.2f, "
        "launcher->G1 start %.2f | device F&F cost over launcher alone: %.2f us gpu",
        hg, hh, fg, fh, fd, ng, nh, tg, th, td, fg - ng);
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
  }

  // indirect dispatch: set grid of a node in a device-launch graph G2, then launch G2 from the device
  if (part == "c") {
    int* o2 = nullptr;
    int* e2 = nullptr;
    CK(cudaMalloc(&o2, 16));
    CK(cudaMalloc(&e2, 16));
    for (int mode = 1; mode <= 2; ++mode) {
      cudaGraph_t g2 = nullptr, l2 = nullptr;
      cudaGraphNode_t nb = nullptr;
      cudaGraphExec_t x2 = nullptr, xl2 = nullptr;
      cudaGraphDeviceNode_t dn = nullptr;
      void* ba[] = {&o2};
      CK(cudaGraphCreate(&g2, 0));
      CK(addKernel(&nb, g2, nullptr, 0, (const void*)k_grid, dim3(1), dim3(32), ba));
      cudaError_t eu = TRY(makeDevUpd(nb, &dn));
      cudaError_t ei = eu ? eu : TRY(cudaGraphInstantiate(&x2, g2, cudaGraphInstantiateFlagDeviceLaunch));
      std::string r = "-";
      if (!ei) {
        CK(cudaGraphUpload(x2, g_s));
        unsigned gx = 37;
        int m = mode;
        void* la[] = {&dn, &gx, &x2, &m, &e2};
        CK(oneKernelGraph(&l2, (const void*)k_indirect, la));
        if (!CK(cudaGraphInstantiate(&xl2, l2, cudaGraphInstantiateFlagDeviceLaunch))) {
          CK(cudaGraphUpload(xl2, g_s));
          char b[400];
          std::string runs;
          for (int rep = 0; rep < 2; ++rep) {
            CK(cudaMemset(o2, 0xFF, 4));
            CK(cudaMemset(o2 + 1, 0, 4));
            CK(cudaMemset(e2, 0xFF, 8));
            cudaError_t le = TRY(cudaGraphLaunch(xl2, g_s));
            cudaError_t se = TRY(cudaStreamSynchronize(g_s));
            int h[2], he[2];
            CK(cudaMemcpy(h, o2, 8, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(he, e2, 8, cudaMemcpyDeviceToHost));
            std::snprintf(b, sizeof b, "%srun%d: launch %s sync %s SetGridDim %s cudaGraphLaunch %s, G2 saw grid=%d blocks=%d",
                          rep ? "; " : "", rep + 1, es(le).c_str(), es(se).c_str(), es((cudaError_t)he[0]).c_str(),
                          es((cudaError_t)he[1]).c_str(), h[0], h[1]);
            runs += b;
          }
          r = runs;
        }
      }
      ANS("Q4 indirect_grid_then_%s: opt-in %s, G2 instantiate(DeviceLaunch) %s; %s (grid 37 expected)",
          modeName[mode], es(eu).c_str(), eu ? "-" : es(ei).c_str(), r.c_str());
      if (xl2) CK(cudaGraphExecDestroy(xl2));
      if (x2) CK(cudaGraphExecDestroy(x2));
      if (l2) CK(cudaGraphDestroy(l2));
      if (g2) CK(cudaGraphDestroy(g2));
    }
    cudaFree(o2);
    cudaFree(e2);
  }

  // which node kinds refuse DeviceLaunch instantiation
  if (part == "d") {
    int* d1 = nullptr;
    int* d2 = nullptr;
    CK(cudaMalloc(&d1, 256));
    CK(cudaMalloc(&d2, 256));
    char* pageable = (char*)std::malloc(256);
    std::memset(pageable, 1, 256);
    char* pinned = nullptr;
    CK(cudaMallocHost(&pinned, 256));
    cudaEvent_t ev;
    CK(cudaEventCreate(&ev));
    const char* kinds[] = {"host_node", "memset_node", "memcpy_device_to_device", "memcpy_from_pageable_host",
                           "memcpy_from_pinned_host", "event_record_node", "child_graph_node", "empty_node"};
    for (int k = 0; k < 8; ++k) {
      cudaGraph_t g = nullptr;
      cudaGraphNode_t kn = nullptr, xn = nullptr;
      int v = 1;
      void* ka[] = {&v, &d1};
      CK(cudaGraphCreate(&g, 0));
      CK(addKernel(&kn, g, nullptr, 0, (const void*)k_param, dim3(1), dim3(32), ka));
      cudaError_t ea = cudaSuccess;
      cudaGraph_t child = nullptr;
      switch (k) {
        case 0: {
          cudaHostNodeParams hp{host_noop, nullptr};
          ea = TRY(cudaGraphAddHostNode(&xn, g, &kn, 1, &hp));
          break;
        }
        case 1: {
          cudaMemsetParams mp{};
          mp.dst = d2;
          mp.value = 0;
          mp.elementSize = 4;
          mp.width = 16;
          mp.height = 1;
          ea = TRY(cudaGraphAddMemsetNode(&xn, g, &kn, 1, &mp));
          break;
        }
        case 2:
          ea = TRY(cudaGraphAddMemcpyNode1D(&xn, g, &kn, 1, d2, d1, 64, cudaMemcpyDeviceToDevice));
          break;
        case 3:
          ea = TRY(cudaGraphAddMemcpyNode1D(&xn, g, &kn, 1, d2, pageable, 64, cudaMemcpyHostToDevice));
          break;
        case 4:
          ea = TRY(cudaGraphAddMemcpyNode1D(&xn, g, &kn, 1, d2, pinned, 64, cudaMemcpyHostToDevice));
          break;
        case 5:
          ea = TRY(cudaGraphAddEventRecordNode(&xn, g, &kn, 1, ev));
          break;
        case 6: {
          int cv = 2;
          void* ca[] = {&cv, &d2};
          CK(oneKernelGraph(&child, (const void*)k_param, ca));
          ea = TRY(cudaGraphAddChildGraphNode(&xn, g, &kn, 1, child));
          break;
        }
        case 7:
          ea = TRY(cudaGraphAddEmptyNode(&xn, g, &kn, 1));
          break;
      }
      std::string r;
      if (ea) {
        r = "refused at add: " + esl(ea);
      } else {
        cudaGraphExec_t ex = nullptr;
        cudaError_t ei = TRY(cudaGraphInstantiate(&ex, g, cudaGraphInstantiateFlagDeviceLaunch));
        if (ei) {
          r = "refused at instantiate: " + esl(ei);
        } else {
          cudaError_t eu = TRY(cudaGraphUpload(ex, g_s));
          cudaError_t el = TRY(cudaGraphLaunch(ex, g_s));
          cudaError_t es_ = TRY(cudaStreamSynchronize(g_s));
          r = "accepted (upload " + es(eu) + ", host launch " + es(el) + ", sync " + es(es_) + ")";
          CK(cudaGraphExecDestroy(ex));
        }
      }
      ANS("Q4 devlaunch_instantiate %s: %s", kinds[k], r.c_str());
      CK(cudaGraphDestroy(g));
      if (child) CK(cudaGraphDestroy(child));
    }
    CK(cudaEventDestroy(ev));
    cudaFree(d1);
    cudaFree(d2);
    cudaFreeHost(pinned);
    std::free(pageable);
  }

  for (int mode = 0; mode < 3; ++mode)
    for (int fl = 0; fl < 2; ++fl) {
      if (L[mode][fl]) CK(cudaGraphExecDestroy(L[mode][fl]));
      if (Lg[mode][fl]) CK(cudaGraphDestroy(Lg[mode][fl]));
    }
  CK(cudaGraphExecDestroy(x1));
  CK(cudaGraphDestroy(g1));
  cudaFree(out);
  cudaFree(err);
  cudaFree(ts);
}

// ===========================================================================
// Q5: 100 kernels gated by device SetEnabled vs IF conditional nodes
// ===========================================================================
static void q5() {
  const int N = 100, WARM = 5, REP = 50;
  int *out = nullptr, *mask = nullptr, *err = nullptr;
  cudaGraphDeviceNode_t* dn_d = nullptr;
  cudaGraphConditionalHandle* h_d = nullptr;
  if (CK(cudaMalloc(&out, N * 4)) || CK(cudaMalloc(&mask, N * 4)) || CK(cudaMalloc(&err, 4)) ||
      CK(cudaMalloc(&dn_d, N * sizeof(cudaGraphDeviceNode_t))) ||
      CK(cudaMalloc(&h_d, N * sizeof(cudaGraphConditionalHandle))))
    return;
  CK(cudaMemset(err, 0, 4));
  int n = N;

  // E: gate(SetEnabled) -> chain of N device-updatable kernels
  cudaGraph_t gE = nullptr, gC = nullptr, gP = nullptr;
  cudaGraphExec_t xE = nullptr, xC = nullptr, xP = nullptr;
  {
    bool ok = !CK(cudaGraphCreate(&gE, 0));
    cudaGraphNode_t gate = nullptr, prev = nullptr;
    void* ga[] = {&dn_d, &mask, &n, &err};
    ok = ok && !CK(addKernel(&gate, gE, nullptr, 0, (const void*)k_gate_enable, dim3(1), dim3(128), ga));
    prev = gate;
    std::vector<cudaGraphDeviceNode_t> dn(N);
    for (int i = 0; ok && i < N; ++i) {
      int v = 1000 + i, ii = i;
      void* a[] = {&v, &ii, &out};
      cudaGraphNode_t nd = nullptr;
      ok = !CK(addKernel(&nd, gE, &prev, 1, (const void*)k_small, dim3(1), dim3(32), a)) &&
           !CK(makeDevUpd(nd, &dn[i]));
      prev = nd;
    }
    ok = ok && !CK(cudaMemcpy(dn_d, dn.data(), N * sizeof(cudaGraphDeviceNode_t), cudaMemcpyHostToDevice));
    ok = ok && !CK(cudaGraphInstantiate(&xE, gE, 0)) && !CK(cudaGraphUpload(xE, g_s));
    if (!ok) xE = nullptr;
  }
  // C: gate(SetConditional) -> chain of N IF nodes, each body one kernel
  {
    bool ok = !CK(cudaGraphCreate(&gC, 0));
    std::vector<cudaGraphConditionalHandle> hs(N);
    for (int i = 0; ok && i < N; ++i)
      ok = !CK(cudaGraphConditionalHandleCreate(&hs[i], gC, 0, cudaGraphCondAssignDefault));
    ok = ok && !CK(cudaMemcpy(h_d, hs.data(), N * sizeof(cudaGraphConditionalHandle), cudaMemcpyHostToDevice));
    cudaGraphNode_t gate = nullptr, prev = nullptr;
    void* ga[] = {&h_d, &mask, &n};
    ok = ok && !CK(addKernel(&gate, gC, nullptr, 0, (const void*)k_gate_cond, dim3(1), dim3(128), ga));
    prev = gate;
    for (int i = 0; ok && i < N; ++i) {
      cudaGraphNodeParams p{};
      p.type = cudaGraphNodeTypeConditional;
      p.conditional.handle = hs[i];
      p.conditional.type = cudaGraphCondTypeIf;
      p.conditional.size = 1;
      cudaGraphNode_t cn = nullptr, kn = nullptr;
      ok = !CK(cudaGraphAddNode(&cn, gC, &prev, nullptr, 1, &p));
      if (!ok) break;
      int v = 1000 + i, ii = i;
      void* a[] = {&v, &ii, &out};
      ok = !CK(addKernel(&kn, p.conditional.phGraph_out[0], nullptr, 0, (const void*)k_small, dim3(1), dim3(32), a));
      prev = cn;
    }
    ok = ok && !CK(cudaGraphInstantiate(&xC, gC, 0)) && !CK(cudaGraphUpload(xC, g_s));
    if (!ok) xC = nullptr;
  }
  // P: plain chain of N kernels, no gate
  {
    bool ok = !CK(cudaGraphCreate(&gP, 0));
    cudaGraphNode_t prev = nullptr;
    for (int i = 0; ok && i < N; ++i) {
      int v = 1000 + i, ii = i;
      void* a[] = {&v, &ii, &out};
      cudaGraphNode_t nd = nullptr;
      ok = !CK(addKernel(&nd, gP, prev ? &prev : nullptr, prev ? 1 : 0, (const void*)k_small, dim3(1), dim3(32), a));
      prev = nd;
    }
    ok = ok && !CK(cudaGraphInstantiate(&xP, gP, 0)) && !CK(cudaGraphUpload(xP, g_s));
    if (!ok) xP = nullptr;
  }
  CK(cudaStreamSynchronize(g_s));

  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const char* maskName[3] = {"all_on", "half_on", "all_off"};
  double res[3][3];  // [graph E,C,P][mask]
  std::string ran[3][3];
  std::vector<int> hm(N), ho(N);
  for (int m = 0; m < 3; ++m) {
    for (int i = 0; i < N; ++i) hm[i] = m == 0 ? 1 : m == 2 ? 0 : (i % 2 == 0);
    CK(cudaMemcpy(mask, hm.data(), N * 4, cudaMemcpyHostToDevice));
    cudaGraphExec_t xs[3] = {xE, xC, xP};
    for (int g = 0; g < 3; ++g) {
      res[g][m] = -1;
      if (!xs[g]) continue;
      std::vector<double> t;
      for (int r = 0; r < WARM + REP; ++r) {
        if (r == WARM + REP - 1) CK(cudaMemset(out, 0xFF, N * 4));  // poison before the last launch
        CK(cudaEventRecord(a, g_s));
        CK(cudaGraphLaunch(xs[g], g_s));
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= WARM) t.push_back(ms * 1000.0);
      }
      res[g][m] = med(t);
      CK(cudaMemcpy(ho.data(), out, N * 4, cudaMemcpyDeviceToHost));
      int cnt = 0, wrong = 0;
      for (int i = 0; i < N; ++i) {
        if (ho[i] == 1000 + i) ++cnt;
        if ((ho[i] == 1000 + i) != (hm[i] != 0)) ++wrong;
      }
      ran[g][m] = std::to_string(cnt) + " ran" + (g < 2 ? (wrong ? ", " + std::to_string(wrong) + " not as mask" : ", as mask") : "");
    }
  }
  int derr = 0;
  CK(cudaMemcpy(&derr, err, 4, cudaMemcpyDeviceToHost));
  for (int m = 0; m < 3; ++m)
    ANS("Q5 gpu_us_per_launch %s (median of %d): SetEnabled-gated %.2f [%s] | IF-conditional-gated %.2f [%s] | "
        "plain ungated chain %.2f [%s]",
        maskName[m], REP, res[0][m], ran[0][m].c_str(), res[1][m], ran[1][m].c_str(), res[2][m], ran[2][m].c_str());
  ANS("Q5 SetEnabled device err: %s", es((cudaError_t)derr).c_str());

  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  if (xE) CK(cudaGraphExecDestroy(xE));
  if (xC) CK(cudaGraphExecDestroy(xC));
  if (xP) CK(cudaGraphExecDestroy(xP));
  if (gE) CK(cudaGraphDestroy(gE));
  if (gC) CK(cudaGraphDestroy(gC));
  if (gP) CK(cudaGraphDestroy(gP));
  cudaFree(out);
  cudaFree(mask);
  cudaFree(err);
  cudaFree(dn_d);
  cudaFree(h_d);
}

// ===========================================================================
// r: riskier extras (run last)
// ===========================================================================
static void qr(const std::string& part) {
  size_t off = paramOffset((const void*)k_param, 0);
  // launch without cudaGraphUpload
  if (part == "1") {
    Bufs B;
    B.resetCtl(0);
    Pair P;
    if (buildPair(P, 0, B.out, B.ctl, off)) {
      cudaGraphExec_t ex = nullptr;
      if (!CK(cudaGraphInstantiate(&ex, P.g, 0))) {
        std::string r = runTwice(ex, B, /*upload=*/false);
        ANS("Q2 launch_without_upload: %s", r.c_str());
        CK(cudaGraphExecDestroy(ex));
      }
      CK(cudaGraphDestroy(P.g));
    }
  }
  // updater kernel launched outside any graph, targeting the exec's node between launches
  if (part == "2") {
    Bufs B;
    B.resetCtl(0, 0);  // the in-graph updater only counts
    Ctl* c2 = nullptr;
    CK(cudaMalloc(&c2, sizeof(Ctl)));
    Ctl c{0, 1, 0, 0};
    CK(cudaMemcpy(c2, &c, sizeof c, cudaMemcpyHostToDevice));
    Pair P;
    if (buildPair(P, 0, B.out, B.ctl, off)) {
      cudaGraphExec_t ex = nullptr;
      if (!CK(cudaGraphInstantiate(&ex, P.g, 0))) {
        CK(cudaGraphUpload(ex, g_s));
        Seen s1 = launchOnce(ex, g_s, B);
        k_updater<<<1, 32, 0, g_s>>>(P.dn, off, c2);  // sets 101
        cudaError_t le = TRY(cudaGetLastError());
        cudaError_t se = TRY(cudaStreamSynchronize(g_s));
        Ctl hc{};
        CK(cudaMemcpy(&hc, c2, sizeof hc, cudaMemcpyDeviceToHost));
        Seen s2 = launchOnce(ex, g_s, B);
        ANS("Q2 update_from_kernel_outside_graph: before B saw %s; standalone updater launch %s sync %s device err %s; "
            "next graph launch B saw %s (101 = applied)",
            seenStr(0, s1).c_str(), es(le).c_str(), es(se).c_str(), esl((cudaError_t)hc.err).c_str(),
            seenStr(0, s2).c_str());
        CK(cudaGraphExecDestroy(ex));
      }
      CK(cudaGraphDestroy(P.g));
    }
    cudaFree(c2);
  }
}

// ---------------------------------------------------------------------------
static bool stickyCheck(const char* q) {
  cudaError_t e1 = cudaDeviceSynchronize();
  (void)cudaGetLastError();
  cudaError_t e2 = cudaDeviceSynchronize();
  if (e1 != cudaSuccess) std::printf("  after %s: cudaDeviceSynchronize -> %s\n", q, esl(e1).c_str());
  if (e2 != cudaSuccess) {
    std::printf("STICKY ERROR after %s: %s -- calling cudaDeviceReset() so later questions can run\n", q,
                esl(e2).c_str());
    cudaDeviceReset();
    CK(cudaSetDevice(0));
    if (g_s) g_s = nullptr;
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    std::fflush(stdout);
    return true;
  }
  return false;
}

static void runJob(const std::string& j) {
  if (j == "0") {
    int rt = 0, drv = 0;
    cudaDeviceProp pr{};
    CK(cudaGetDeviceProperties(&pr, 0));
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    std::printf("device: %s (sm_%d%d), runtime %d, driver %d\n", pr.name, pr.major, pr.minor, rt, drv);
  } else if (j == "1") q1();
  else if (j[0] == '2') q2(j.substr(1));
  else if (j == "3") q3();
  else if (j[0] == '4') q4(j.substr(1));
  else if (j == "5") q5();
  else if (j[0] == 'r') qr(j.substr(1));
  else std::printf("unknown job %s\n", j.c_str());
}

// All jobs, in the order they run: the likeliest to fault last.
static const char* kJobs[] = {"0", "1", "2a", "2b", "2d1", "2d1v1", "2d1v2", "2d1v3", "2d1v4", "2d2", "2d3", "2e", "2f", "2g", "2h",
                              "3", "5", "4a", "4b", "4c", "4d", "4e", "r1", "r2"};

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> jobs(argv + 1, argv + argc);
  bool child = !jobs.empty() && jobs[0] == "--child";
  if (child) jobs.erase(jobs.begin());

  if (!child) {
    // Parent: one process per job, so that a crash (a segfault inside the driver, a
    // sticky fault) ends only that job and is reported; the parent never touches CUDA.
    if (jobs.empty()) jobs.assign(std::begin(kJobs), std::end(kJobs));
    int sumErr = 0, sumAns = 0;
    std::string crashed, timedout;
    for (auto& j : jobs) {
      int fds[2];
      if (pipe(fds) != 0) return 2;
      std::fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 3);
        execl("/proc/self/exe", argv[0], "--child", j.c_str(), (char*)nullptr);
        _exit(127);
      }
      close(fds[1]);
      int st = 0;
      long long t0 = now_ms();
      bool killed = false;
      for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) break;
        if (now_ms() - t0 > 120000 && !killed) {
          kill(pid, SIGKILL);
          killed = true;
        }
        usleep(20000);
      }
      char buf[64] = {0};
      ssize_t n = read(fds[0], buf, sizeof buf - 1);
      close(fds[0]);
      int e = 0, a = 0;
      if (n > 0) std::sscanf(buf, "%d %d", &e, &a);
      sumErr += e;
      sumAns += a;
      if (killed) {
        timedout += " " + j;
        std::printf("  JOB %s: TIMEOUT, killed after 120 s\n", j.c_str());
      } else if (WIFSIGNALED(st)) {
        crashed += " " + j;
        std::printf("  JOB %s: CRASHED, killed by signal %d (%s)\n", j.c_str(), WTERMSIG(st), strsignal(WTERMSIG(st)));
      } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        crashed += " " + j;
        std::printf("  JOB %s: exited with status %d\n", j.c_str(), WEXITSTATUS(st));
      }
    }
    std::printf("DONE: %zu jobs; %d unexpected CUDA errors, %d probed calls returned an error (answers); "
                "crashed:%s; timed out:%s\n",
                jobs.size(), sumErr, sumAns, crashed.empty() ? " none" : crashed.c_str(),
                timedout.empty() ? " none" : timedout.c_str());
    return 0;
  }

  // Child (or direct use with --child JOB...): run the named jobs in this process.
  std::signal(SIGSEGV, onSignal);
  std::signal(SIGABRT, onSignal);
  std::signal(SIGBUS, onSignal);
  std::signal(SIGFPE, onSignal);
  std::thread(watchdog).detach();
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
  for (auto& j : jobs) {
    g_job = j.c_str();
    auto t0 = clk::now();
    arm(j.c_str(), 90);
    runJob(j);
    stickyCheck(j.c_str());
    g_deadline = 0;
    std::printf("  (job %s: %.0f ms, %d unexpected errors, %d answer-errors so far)\n", j.c_str(),
                us_since(t0, clk::now()) / 1000.0, g_err, g_ans);
  }
  if (fcntl(3, F_GETFD) != -1) dprintf(3, "%d %d", g_err, g_ans);
  return 0;
}
