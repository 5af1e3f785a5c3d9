// Pieces several commands share: opening the store and the backend with one clear line on
// failure, the worker command line for isolated candidates, and Ctrl-C for commands that run
// programs.
#pragma once

#include <atomic>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "cli/commands.h"
#include "store/store.h"

namespace attune::cli {

// The store at g.db, or nullptr after printing one line (the caller exits with kExitBadInput).
// read_only_ok: for commands that only read, a database this user cannot write is opened to read.
std::unique_ptr<Store> open_store_or_report(const GlobalOptions& g, bool create_if_missing,
                                            bool read_only_ok = false);
// False after one line when `out`, the file `flag` writes, is the database g.db or one of `inputs`
// (files the command reads): writing it would destroy what it holds. Checked before any work.
bool output_is_free_or_report(const GlobalOptions& g, std::string_view flag, const std::string& out,
                              std::initializer_list<std::string_view> inputs = {});
// The devices of `store` whose key or slug is `device` (every one when it is empty); an error
// names the devices there are, or says the database `db` holds no measurements.
Result<std::vector<DeviceFingerprint>> devices_named(Store& store, const std::string& device,
                                                     const std::string& db);
// bad_input for a user's error (Error::Kind::kInvalidArgument), else failed: the exit code says
// which.
int exit_for(const Error& e);
// The backend named, or the default one (with a note on stderr), on device `device` (into its
// devices(); -1: the backend's default); nullptr after one line.
std::unique_ptr<Backend> open_backend_or_report(const std::string& name, int device = -1);
// --device INDEX on a command (an index into the backend's devices, as attune device --list shows
// them); *device stays -1 when it is not given. `what` finishes the help text.
void add_device_option(CLI::App* sub, int* device, const std::string& what);
// Points the backend at device `index` (-1: leaves its default), or prints one line naming how
// many devices there are and returns false.
bool select_device_or_report(Backend& backend, int index);
// "--shard i/n" as (i, n); "auto" or "auto/n" takes i (and n) from the cluster's scheduler: a
// SLURM job array (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT) or a
// Kubernetes indexed Job (JOB_COMPLETION_INDEX of n or $ATTUNE_SHARD_COUNT). An error names the
// form, or what the environment lacks.
Result<std::pair<std::uint32_t, std::uint32_t>> parse_shard(const std::string& s);
// This executable's path, for starting workers.
std::string self_executable();

// Set by the first SIGINT/SIGTERM/SIGHUP once install_interrupt_handlers() ran.
extern std::atomic<bool> g_interrupted;
// The first SIGINT/SIGTERM/SIGHUP kills the programs attune is running (platform Children, each in
// its own process group, so the terminal's SIGINT does not reach them) and sets g_interrupted so
// the command can stop cleanly; a second one, a second or more after the first, ends attune at
// once (its programs die with it). One sooner is the same request delivered again (`timeout` and
// schedulers signal the process and then its group).
void install_interrupt_handlers();

}  // namespace attune::cli
