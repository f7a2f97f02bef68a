// KindTraits: the facts every stage may ask about a kind of command without knowing it. Each
// payload in payloads.hpp carries its own; kind_table gathers them in CommandKind's order.
#pragma once

#include <cmdgraph/command.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace cmdgraph::detail {

struct KindTraits {
  CommandKind kind;
  std::string_view name;       ///< to_string(kind), and default command names "name#index"
  std::string_view dot_shape;  ///< Graphviz node shape
  std::uint64_t weight = 1;    ///< scheduling weight; 0: ordering only, costs nothing
  bool runs_device_code = false;  ///< a suspect when a CUDA launch faults
  bool updatable = false;         ///< its values change through Executable::update(handle, ...)
  bool in_device_loop = true;     ///< may sit in the body of a conditional command on a CUDA
                                  ///< device (a conditional node's body graph)
  bool in_device_graph = true;    ///< may be in a graph launched from the device, if it may be
                                  ///< in a conditional body (CompileOptions::device_launch:
                                  ///< CUDA's device graphs hold no empty or conditional node)
  bool declares_access = false;   ///< takes reads()/writes() (a conditional command's: what its
                                  ///< condition reads); else its access is implied by what it
                                  ///< stores (copies, fills, executed buffers) or it has none
  bool programmatic = false;      ///< runs one kernel that may sit at either end of a
                                  ///< programmatic edge (EdgeKind::programmatic)
  bool conditional = false;       ///< runs its bodies as a condition evaluated as it runs
                                  ///< decides: a conditional node on CUDA (the streams backend,
                                  ///< which enqueues ahead, launches it as a graph of its own)
  bool sized_on_device = false;  ///< reads its grid or count from memory as it runs: on a CUDA
                                 ///< graph a device-updatable kernel node a dispatcher kernel
                                 ///< sizes (its graph cannot be updated as a whole, cloned or
                                 ///< instantiated twice); the streams backend launches the two
                                 ///< as a graph of its own
  bool expands = false;           ///< runs its one body in its place: flattened, the body's
                                  ///< commands sit between two joins (an executed buffer)
  bool reaches_peers = false;     ///< may touch another GPU's memory (a peer copy); other
                                  ///< kinds touch their own device's and host memory only
  bool pinned_or_device = false;  ///< touches only memory a GPU reaches directly, device or
                                  ///< pinned, never pageable (a memory operation)
  bool captured = false;          ///< on a CUDA graph, what stream capture made of work a
                                  ///< callable or library enqueued as the graph was built:
                                  ///< building the graph again runs that again

  /// The name with its article, for messages: "a host", "an indirect".
  std::string with_article() const {
    const bool vowel = std::string_view("aeiou").find(name.front()) != std::string_view::npos;
    return (vowel ? "an " : "a ") + std::string(name);
  }
};

}  // namespace cmdgraph::detail
