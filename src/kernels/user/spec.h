// User-kernel specs: the YAML file that makes a user's own CUDA kernel tunable
// (`attune tune --kernel my.cu --spec my.yaml`), checked in full at load time, and what the CUDA
// backend needs from it per Config: the Space, the Problem, launch geometry, argument buffers and
// NVRTC options. No CUDA headers here. A loaded UserKernelSpec is immutable: thread-safe to share.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/expr.h"
#include "core/problem.h"
#include "core/space.h"
#include "core/value.h"

namespace attune::user {

// ---- element types --------------------------------------------------------------------------

enum class ElementType {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt32,
  kInt64,
  kUInt32,
  kInt8,
  kUInt8
};

std::string_view to_string(ElementType t);  // the spec's spelling: "float32", "bfloat16", ...
std::optional<ElementType> element_type_from_string(std::string_view s);
std::size_t size_of(ElementType t);  // bytes per element
bool is_floating(ElementType t);
// The dtype name the correctness gate's tolerance_for() knows ("fp32", "fp64", "fp16", "bf16");
// for integer types the type's own name (integer outputs are compared exactly, see Tolerance).
std::string_view gate_dtype(ElementType t);

// Where in the spec file a field was written, for one-line messages ("my.yaml:12:5: ...").
struct Mark {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
};

// ---- the spec -------------------------------------------------------------------------------

struct KnobSpec {
  std::string name;
  std::vector<Value>
      values;  // integers or words (a word knob, float4, reads as a string in constraints only)
  std::size_t default_index = 0;
  std::string define;  // the macro name under pass_knobs_as: defines; default the upper-cased name
  Mark mark;
};

struct ConstraintSpec {
  Expr expr;
  Mark mark;
};

// Launch geometry as expressions; missing dimensions are "1".
struct LaunchSpec {
  std::array<Expr, 3> grid;
  std::array<Expr, 3> block;
  Expr shared_memory_bytes;  // dynamic shared memory; default "0"
};

enum class KnobPassing {
  kDefines,   // -DBLOCK_SIZE=256 for every knob (default)
  kTemplate,  // kernel<args...>: knob values as template arguments, in template_args order,
              // after any fixed arguments written in the kernel's name ("scale<float>")
};

enum class ArgRole {
  kInput,    // filled before each check (see Fill); the reference sees the same values
  kOutput,   // poisoned before each run, compared with the reference after
  kInOut,    // filled like an input, compared like an output
  kScratch,  // workspace, neither filled nor compared; its size may depend on knobs
  kScalar,   // passed by value
};
std::string_view to_string(ArgRole r);

// How an input or inout buffer gets its values before a check. Whatever the kind, the reference
// and the candidate see the same values.
enum class FillKind {
  kRandom,    // `fill: random` (default): fresh values, uniform in the argument's range, for
              // every check; drawn by the backend (on the device) from a seed
  kConstant,  // `fill: {constant: 1.5}`: every element the value, in the argument's type
  kFile,      // `fill: {file: x.npy}`: the elements of a NumPy .npy file, as stored
};
std::string_view to_string(FillKind k);  // "random", "constant", "file"

struct Fill {
  FillKind kind = FillKind::kRandom;
  double constant = 0;         // kConstant; an integer type's value is integral and in range
  std::filesystem::path file;  // kFile: the .npy, resolved against the spec's directory
  // kFile, from the header checked at load (dtype = the argument's type, C order): the element
  // count it holds (checked against the argument's size for each problem) and where its data
  // starts in the file.
  std::int64_t file_elements = 0;
  std::int64_t file_data_offset = 0;
};

struct ArgSpec {
  std::string name;
  ElementType type = ElementType::kFloat32;
  ArgRole role = ArgRole::kInput;
  Expr size;                         // buffers: elements (only problem sizes, except for scratch)
  Expr value;                        // integer scalars, and float scalars given as expressions
  std::optional<double> real_value;  // float scalars given as a literal such as 0.5
  // Inputs with fill kRandom: values drawn uniformly from [lo, hi] (integers inclusive). Default
  // [-1, 1] for floating types, [0, 100] for integer types.
  std::pair<double, double> range{-1.0, 1.0};
  Fill fill;  // inputs and inouts
  // `memory: constant` (Kernel Tuner's cmem_args): an input that is a __constant__ array of the
  // module, named `symbol` (default: the argument's name), rather than a kernel parameter. The
  // backend fills the symbol before each run, in the tuned kernel's module and in the reference
  // kernel's; it is never passed to the kernel. Only inputs; its size is of problem sizes only.
  bool constant_memory = false;
  std::string symbol;  // set (to the name by default) when constant_memory
  Mark mark;
};

struct ReferenceKernel {
  std::string name;  // __global__ symbol or name expression, compiled without tuning knobs
  std::filesystem::path source_path;  // the kernel's .cu unless `file:` names another
  std::string source;                 // its text
  LaunchSpec launch;                  // expressions of problem sizes only
  std::vector<std::pair<std::string, Expr>> defines;  // extra -D for the reference only
  std::vector<std::string> compile_options;
};

// A C function in a shared library, called on the host with the inputs already filled:
//   extern "C" int NAME(void* const* args, const int64_t* counts, int num_args);
// args[i] is the i-th spec argument: for a buffer, host memory holding counts[i] elements of its
// type (inputs and inouts filled, outputs to be written by the function, scratch unspecified);
// for a scalar, a pointer to its value in its type, with counts[i] == 1. Constant-memory arguments
// are buffers like the others here. It returns 0 on success;
// any other value fails the check. It is called from one thread at a time.
struct ReferenceLibrary {
  std::filesystem::path path;
  std::string function;
};

using Reference = std::variant<ReferenceKernel, ReferenceLibrary>;

// The gate's tolerance. Unset fields come from tolerance_for(gate_dtype(output type),
// reduction_length) in src/verify; integer outputs default to exact comparison (rtol 0).
struct ToleranceSpec {
  std::optional<double> rtol;
  std::optional<double> floor;
  std::optional<Expr> reduction_length;  // of problem sizes, e.g. "k" for a dot product
};

// A user metric, `metrics: {gflops: "2.0 * n * n * n / (time_s * 1e9)"}`: real arithmetic over
// the problem sizes and the time (time_s, time_ms, time_us), never the knobs.
struct MetricSpec {
  std::string name;
  Expr expr;
  Mark mark;
};

// What the tuning optimizes: the time (default) or a metric. The search always ranks by time; a
// metric objective is accepted only when it is a strictly monotonic function of the time in the
// declared direction (checked at load), so ranking by it is ranking by time.
struct Objective {
  std::string metric;  // "" : the time, lower is better
  bool higher_is_better = false;
  Mark mark;  // of the metric's name under objective:
};

struct UserKernelSpec {
  std::filesystem::path spec_path;
  std::filesystem::path source_path;  // the .cu file
  std::string source;                 // its text, as NVRTC compiles it
  std::string kernel;                 // __global__ symbol, or a template-id ("scale<float>")
  std::string description;            // free text for listings; "" when absent
  std::vector<std::pair<std::string, std::int64_t>> problem;  // sizes in spec order
  std::vector<KnobSpec> knobs;
  std::vector<ConstraintSpec> constraints;
  KnobPassing pass_knobs_as = KnobPassing::kDefines;
  std::vector<Expr> template_args;                    // template mode; default: every knob in order
  std::vector<std::pair<std::string, Expr>> defines;  // extra -DNAME=value for every config
  std::vector<std::string> compile_options;           // extra NVRTC options, e.g. -use_fast_math
  LaunchSpec launch;
  std::vector<ArgSpec> args;
  Reference reference;
  ToleranceSpec tolerance;
  std::vector<MetricSpec> metrics;  // in spec order
  Objective objective;
  // Doubts that are not errors, one line each with file:line:col, for the CLI to print: a knob
  // macro the source never mentions (it may come through a header, so this is not refused).
  std::vector<std::string> warnings;
};

// Reads and checks a spec. Relative paths inside it resolve against the spec file's directory.
// kernel_file (the CLI's --kernel) overrides the spec's `source:`; one of them must be given.
// Every error is one line: "path:line:col: what is wrong; what would be right".
Result<UserKernelSpec> load_spec(const std::filesystem::path& spec_file,
                                 const std::optional<std::filesystem::path>& kernel_file = {});
// The same from text; spec_file names it in messages and anchors relative paths.
Result<UserKernelSpec> parse_spec(std::string_view yaml, const std::filesystem::path& spec_file,
                                  const std::optional<std::filesystem::path>& kernel_file = {});

// Overrides problem sizes from the CLI: "n=123" or "m=64,n=4096". Only sizes the spec declares.
Status set_problem_sizes(UserKernelSpec& spec, std::string_view assignments);

// ---- what the backend asks per problem and per config --------------------------------------

// Knobs in spec order, defaults as the baseline; each constraint reads exactly the knobs its
// expression names, with problem sizes as constants. A constraint that names no knob is a
// requirement on the problem: if it fails, this is an error. A constraint whose evaluation
// fails for a config (division by zero, overflow) excludes that config.
Result<Space> make_space(const UserKernelSpec& spec);

// op "user"; attrs: kernel, source (hash of the kernel's source text), launch (hash of the
// launch and argument description), and each problem size. The structural key changes when the
// source, the launch description or a size changes, not when knobs or constraints do.
Problem make_problem(const UserKernelSpec& spec);

// The spec serving `problem` (CudaFamily::resolve for op "user"). A Problem made by
// make_problem() (possibly in another process, as in `attune worker`, or with other sizes) must
// match this spec's kernel, source and launch hashes; an error names what differs, e.g. a
// kernel source edited since the run began. A problem with sizes only ("user:n=123") takes
// those sizes and the spec's defaults for the rest. Either way the result has the problem's
// sizes, and make_problem() of it is the complete problem.
Result<UserKernelSpec> spec_for_problem(const UserKernelSpec& spec, const Problem& problem);

struct Launch {
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t shared_memory_bytes = 0;
  std::int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
};

struct ArgInstance {
  std::string name;
  ElementType type = ElementType::kFloat32;
  ArgRole role = ArgRole::kInput;
  std::int64_t elements = 0;  // buffers; 1 for scalars
  std::int64_t bytes = 0;     // elements * size_of(type)
  // Scalars: the value in its type, little-endian, in the first size_of(type) bytes (what
  // cuLaunchKernel's kernelParams entry points at). Also as numbers, for logs.
  std::array<unsigned char, 8> scalar_bytes{};
  std::int64_t scalar_int = 0;
  double scalar_real = 0;
  std::pair<double, double> range{-1.0, 1.0};  // fill kRandom
  Fill fill;
  bool constant_memory = false;  // a __constant__ symbol, filled before the run, not a parameter
  std::string symbol;            // its name in the module (constant_memory)
  std::size_t spec_index = 0;    // the argument's index in UserKernelSpec::args
};

// The bytes of an input with a fixed fill (kConstant or kFile), a.bytes of them, on the host; the
// same for every check, the reference and every candidate. A file is read here (its header was
// checked at load); an element count that does not match a.elements, a file changed or gone since,
// or a random fill is an error naming the argument.
Result<std::vector<unsigned char>> fixed_bytes(const ArgInstance& a);

// Everything needed to build and launch one kernel.
struct Instance {
  // The name to hand nvrtcAddNameExpression (and then nvrtcGetLoweredName): "vector_add",
  // or "transpose<32, 8, 1>" in template mode. For an extern "C" kernel it is the symbol itself.
  std::string name_expression;
  // -DNAME=value for each knob (defines mode) and each extra define, then compile_options;
  // the backend adds the architecture. Deterministic order, so they can key a build cache.
  std::vector<std::string> compile_options;
  Launch launch;
  // The kernel's parameters in order: every spec argument but the constant-memory ones.
  std::vector<ArgInstance> args;
  // The constant-memory arguments (constant_memory set), in spec order: __constant__ symbols of
  // the module to fill before each run. spec_index merges them back into spec order (a reference
  // library takes every argument in spec order).
  std::vector<ArgInstance> constant_args;
};

// Hardware limits a launch is checked against; the defaults hold on every GPU since sm_50. The
// backend passes the device's own values (opt-in shared memory differs per architecture).
struct LaunchLimits {
  std::int64_t max_threads_per_block = 1024;
  std::array<std::int64_t, 3> max_block{1024, 1024, 64};
  std::array<std::int64_t, 3> max_grid{2147483647, 65535, 65535};
  std::int64_t max_shared_memory_bytes = 48 * 1024;  // per block without opt-in
};

// The kernel for one config. An impossible config (a grid or block that evaluates to <= 0 or
// past the limits, too much shared memory, an expression that fails for these values) is
// Error::unsupported with the reason as its message: the backend records it as the verdict
// unsupported without building anything. Other errors (a config not of this spec) are
// invalid_argument.
Result<Instance> instantiate(const UserKernelSpec& spec, const Config& config,
                             const LaunchLimits& limits = {});
// Backend::can_implement in one call: nullopt, or the reason the config is unsupported.
std::optional<std::string> unsupported_reason(const UserKernelSpec& spec, const Config& config,
                                              const LaunchLimits& limits = {});

// The reference for the spec's problem. For a reference kernel: its name expression, its
// compile options (the baseline config's knob defines, so a source that insists on them still
// compiles; the spec's extra defines; the reference's own defines and options; not the spec's
// compile_options, which are the tuned kernel's), its launch, and the arguments as for the
// baseline config. For a library: only args is meaningful.
Result<Instance> instantiate_reference(const UserKernelSpec& spec, const LaunchLimits& limits = {});

// The gate's tolerance for argument `arg` (an output or inout, by index into spec.args): the
// spec's rtol/floor where given, exact comparison (rtol 0) for integer outputs, otherwise nullopt
// meaning tolerance_for(dtype, reduction_length) from src/verify.
struct GateTolerance {
  std::optional<double> rtol;
  std::optional<double> floor;
  std::string dtype;  // gate_dtype of the argument's type: "fp32", "bf16", "int32", ...
  std::int64_t reduction_length = 1;
};
Result<GateTolerance> gate_tolerance(const UserKernelSpec& spec, std::size_t arg);

// ---- the space without a GPU (attune space) ------------------------------------------------

// The configs of a spec's Space, counted as a tune would meet them. The launch check is
// unsupported_reason() with every limit that holds on all GPUs (threads per block, block and grid
// sizes); shared memory, which differs per GPU, is left to the device.
struct SpaceCensus {
  double cartesian = 0;            // the knobs' full product
  std::uint64_t legal = 0;         // configs the constraints allow
  std::uint64_t unlaunchable = 0;  // of them, refused by the launch check before any build
  std::uint64_t launchable() const { return legal - unlaunchable; }
  // With keep_configs: the launchable configs in enumeration order (the baseline first), and the
  // unlaunchable ones with the reason.
  std::vector<Config> configs;
  std::vector<std::pair<Config, std::string>> refused;
};
SpaceCensus census(const UserKernelSpec& spec, const Space& space, bool keep_configs);

// The spec's metrics, in spec order, for a median time of `time_us` at the spec's problem sizes
// (spec_for_problem() gives a spec at a problem's sizes). An evaluation that fails (a division by
// zero) or is not finite leaves that metric out.
std::vector<std::pair<std::string, double>> evaluate_metrics(const UserKernelSpec& spec,
                                                             double time_us);

}  // namespace attune::user
