// cmdgraph: Vulkan-style explicit command buffers for CUDA. The one header users include.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/config.hpp>
#include <cmdgraph/device.hpp>
#include <cmdgraph/error.hpp>
#include <cmdgraph/event.hpp>
#include <cmdgraph/executable.hpp>
#include <cmdgraph/executable_cache.hpp>
#include <cmdgraph/fence.hpp>
#include <cmdgraph/graph_shape.hpp>
#include <cmdgraph/launch_config.hpp>
#include <cmdgraph/memory.hpp>
#include <cmdgraph/portable.hpp>
#include <cmdgraph/priority.hpp>
#include <cmdgraph/profile.hpp>
#include <cmdgraph/queue.hpp>
#include <cmdgraph/semaphore.hpp>
#include <cmdgraph/transient.hpp>
#include <cmdgraph/typed_commands.hpp>
#if CMDGRAPH_HAVE_NCCL
#include <cmdgraph/communicator.hpp>
#endif
