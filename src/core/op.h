// OpSignature: what one built-in op is, said once in the op's own folder
// (src/kernels/<op>/<op>_op.cpp): its attributes in order, flags, dtypes, baseline config, the
// --op/--shape syntax and libattune-rt's key for it. The CLI, the CUDA families, the kernel plans,
// libattune-rt's key and index and the sim read it from here instead of spelling an op out.
// Signatures are immutable after registration: thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/problem.h"
#include "core/space.h"

namespace attune {

// What one run of a problem must at least do: bytes read and written once each, and arithmetic
// operations (a multiply-add counts 2). An estimate of what a problem costs before any of it is
// timed: a layer tune shares its time limit among its kernels by it.
struct OpWork {
  double bytes = 0;
  double flops = 0;
};

struct OpSignature {
  std::string name;  // Problem::op(), and the op's folder src/kernels/<name>/
  // Positive integer attributes, in --shape order. The first is the axis a bucketed table ranges
  // over; libattune-rt's key holds up to kKeySizes of them (runtime/shape_key.h).
  std::vector<std::string> sizes;
  std::vector<std::string> flags;  // 0|1 attributes, 0 by default, always written in a problem
  // 0|1 attributes added after the op's first release (gemm's epilogues): 0 by default and
  // written in a problem's text only when 1, so every key stored before they existed still
  // matches. libattune-rt keys flags then optional flags, at most eight in all.
  std::vector<std::string> optional_flags;
  std::vector<std::string> dtypes;  // element types; the first is the default
  std::int64_t max_size = 0;        // the largest value a size may take
  // What a miss of libattune-rt runs and what a tuned row must beat: the family's baseline.
  std::string baseline_config;
  std::string example_shape;  // a --shape of this op, e.g. "16x4096x4096"
  // The op's tag in libattune-rt's dispatch key (runtime/shape_key.h); unset: libattune-rt has no
  // entry point for it, and a table's rows of it are left unused.
  std::optional<std::uint8_t> runtime_key;
  // attune sweep: the value of each size a sweep's grid leaves out (attention_decode: q_heads 32,
  // kv_heads 8, q_len 1, the decode step of Qwen3-8B and Llama-3.1-8B); a size with no default
  // must be given on the command line.
  std::map<std::string, std::string> sweep_defaults;
  // attune sweep compresses its rows into one default config per dtype and per value of these
  // sizes (attention_decode: head), plus exception rows where the default's regret is too high.
  std::vector<std::string> sweep_default_per;
  // What the op asks of its sizes together, after each one passed the checks above
  // (attention_decode: query heads a multiple of KV heads); nullptr: nothing more. Its error is
  // the one line resolve() refuses the spec with.
  Status (*check)(const Problem& resolved) = nullptr;
  // The op's search space for a resolved problem when it is a pure function of the sizes, said
  // once here for its CUDA family, libattune-rt's check of a table's rows at open and the sim
  // (attention_prefill; the sim's gemm and rmsnorm tune knobs of their own); nullptr: each says
  // its own, and rows are checked by the kernel plan only.
  Result<Space> (*space)(const Problem& resolved) = nullptr;
  // The least a run of a resolved problem does (OpWork); nullptr: unknown.
  OpWork (*work)(const Problem& resolved) = nullptr;
  // First guesses at a resolved problem, evaluated right after the baseline and a sweep's warm
  // start, before the strategy proposes: configs the op's author expects to do well where the
  // search might not look soon (attention_decode: enough KV splits to fill the GPU at a small
  // batch). Each is "knob=value,..." over the space's baseline (the knobs it leaves out keep the
  // baseline's values); one that names a knob the space lacks, or makes an illegal config, is
  // skipped. The grid strategy, which walks the space in its order, takes none; nullptr: none.
  std::vector<std::string> (*seed_configs)(const Problem& resolved) = nullptr;

  // --shape's form: the sizes upper-cased and joined by 'x' ("MxNxK", "ROWSxHIDDEN").
  std::string shape_syntax() const;
  // The problem of `--op NAME --shape SHAPE [--dtype DTYPE]` (dtype "" leaves it to resolve()).
  Result<Problem> problem_from_shape(const std::string& shape, const std::string& dtype) const;
  // Validates and completes a spec of this op: unknown attributes refused, sizes positive
  // integers up to max_size, dtype one of dtypes (the first by default), each flag 0 (the
  // default) or 1, then the op's own check.
  Result<Problem> resolve(const Problem& spec) const;
};

// Every built-in op, in registration order. Defined by the registration list, src/kernels/ops.cpp
// (library attune_ops, which depends on core only): link attune_ops to call these.
const std::vector<const OpSignature*>& registered_ops();
// nullptr when no built-in op has that name.
const OpSignature* find_op(std::string_view name);
// `--op OP --shape SHAPE [--dtype DTYPE]` as a problem; an op that is not registered is refused
// with the ops that are and their shape syntax.
Result<Problem> problem_from_shape(const std::string& op, const std::string& shape,
                                   const std::string& dtype);

// The op's first guesses at a resolved problem (OpSignature::seed_configs) as configs of its
// space, in the op's order, each once: a guess is the baseline with the knobs it names set, and a
// pinned knob (`--pin`) the guess does not name takes its pinned value instead of the baseline's.
// One naming a knob this space lacks (a space recorded before the knob existed), or giving an
// illegal config, is left out (the tuner also leaves out one naming a pinned knob with another
// value). The tuner evaluates them right after the baseline (and a sweep's warm start); a layer
// tune hands their builds to the backend first; bench/search_replay replays them on a space the
// op recorded.
std::vector<Config> first_guesses(const Problem& problem, const Space& space,
                                  const std::map<std::string, std::string>& pins = {});

}  // namespace attune
