#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace jitcache::cli {

/// What becomes of one item of work done in a worker process.
struct WorkerPoolCalls {
  /// The worker's answer for item `item` (its JSON line); called on the calling thread.
  std::function<void(std::size_t item, const nlohmann::json& answer)> done;
  /// Item `item` got no answer: its worker ended first (crashed, killed) or none was left;
  /// `why` says which.
  std::function<void(std::size_t item, const std::string& why)> lost;
  /// Item `item` was handed to a worker (for a progress line to name it); may be empty.
  std::function<void(std::size_t item)> given;
};

/// Does items 0 .. count-1 in up to `workers` child processes, each started as `argv` (argv[0]
/// an executable path; the environment is this process's, signals at their defaults): a worker
/// is sent one item number per line on its standard input and answers one JSON line per item
/// on its standard output, with the item's number under "item" (serve_items() is the other
/// end); each item goes to the first worker free, so long and short items even out. Why
/// processes and not threads: NVRTC holds one lock for a whole compile and hipRTC cannot
/// compile twice at once in a process, so only processes compile in parallel. Their standard
/// error is this one's. Returns how many workers were started: 0 when none could be (nothing
/// was done; the caller does the work itself). Every item gets `done` or `lost` otherwise.
std::size_t run_in_workers(const std::vector<std::string>& argv, std::size_t workers,
                           std::size_t count, const WorkerPoolCalls& calls);

/// The worker's side: reads item numbers from standard input until it ends, and writes
/// `work(item)` with "item" added as one line each (text that is not UTF-8 replaced) to what
/// standard output was; standard output itself is pointed at standard error first, so that
/// nothing else written to it (by `work`, a runtime or its child processes) reaches the answers.
/// Returns 0, or 2 (one line on stderr) for a line that is not an item number below `count`, or
/// when the answers cannot be written.
int serve_items(std::size_t count, const std::function<nlohmann::json(std::size_t)>& work);

} // namespace jitcache::cli
