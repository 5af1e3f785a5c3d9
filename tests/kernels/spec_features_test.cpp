// Issue 14's spec features, as Kernel Tuner users rely on them: constant-memory arguments,
// inputs from constants and .npy files, user metrics and the objective, restrictions written in
// Python, and the census of a space that `attune space` prints without a GPU.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/user/spec.h"
#include "support/temp_dir.h"

namespace attune::user {
namespace {

using attune::testing::TempDir;
using attune::testing::write_bytes;

const char* kSource = R"(
__constant__ float d_filter[17 * 17];
__constant__ int taps[4];
extern "C" __global__ void conv(float* out, const float* in, int n) {}
extern "C" __global__ void conv_ref(float* out, const float* in, int n) {}
)";

// A NumPy .npy file (format 1.0) as numpy.save writes it: magic, version, a header dict padded
// with spaces to a multiple of 64 bytes and ended by '\n', then the data.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                bool fortran = false) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  std::size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// The spec's lines 1-11; tests append the arguments they are about, then the reference.
std::string spec_with(const std::vector<std::string>& args, const std::string& tail = "") {
  std::string s =
      "kernel: conv\n"
      "problem: {n: 289}\n"
      "knobs:\n"
      "  block_size: {values: [32, 64, 128], default: 64}\n"
      "grid: [\"ceil_div(n, block_size)\"]\n"
      "block: [block_size]\n"
      "args:\n"
      "  - {name: out, type: float32, buffer: output, size: n}\n";
  for (const auto& a : args) s += "  - " + a + "\n";
  s += "  - {name: n, type: int32, scalar: n}\n";
  s += "reference: {kernel: {name: conv_ref, grid: [\"ceil_div(n, 64)\"], block: [64]}}\n";
  return s + tail;
}

const std::string kIn = "{name: in, type: float32, buffer: input, size: n}";

class SpecFeatures : public ::testing::Test {
 protected:
  void SetUp() override {
    write_bytes(dir_.file("conv.cu"), kSource);
    std::vector<float> f(289);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = 0.25f * static_cast<float>(i);
    write_bytes(dir_.file("f4_289.npy"), npy("<f4", "(17, 17)", bytes_of(f)));
    write_bytes(dir_.file("f4_100.npy"), npy("<f4", "(10, 10)", bytes_of(std::vector<float>(100))));
    write_bytes(dir_.file("f8_289.npy"), npy("<f8", "(289,)", bytes_of(std::vector<double>(289))));
    write_bytes(dir_.file("fortran.npy"), npy("<f4", "(17, 17)", bytes_of(f), true));
    write_bytes(dir_.file("short.npy"), npy("<f4", "(289,)", bytes_of(std::vector<float>(5))));
    write_bytes(dir_.file("text.npy"), "just text, not an array");
    std::vector<std::int32_t> taps{1, -2, 3, -4};
    write_bytes(dir_.file("taps.npy"), npy("<i4", "(4,)", bytes_of(taps)));
  }
  std::filesystem::path spec_path() const { return dir_.path() / "conv.yaml"; }
  Result<UserKernelSpec> load(const std::string& yaml) {
    write_bytes(spec_path().string(), yaml);
    return load_spec(spec_path(), dir_.path() / "conv.cu");
  }
  UserKernelSpec load_ok(const std::string& yaml) {
    auto s = load(yaml);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return s ? std::move(s).value() : UserKernelSpec{};
  }
  // The message of a spec that must be refused at load, checked to be one line at `line`.
  std::string refused(const std::string& yaml, int line) {
    auto s = load(yaml);
    EXPECT_FALSE(s.ok()) << "loaded:\n" << yaml;
    if (s) return "";
    const std::string& m = s.error().message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    const std::string where = spec_path().string() + ":" + std::to_string(line) + ":";
    EXPECT_EQ(m.rfind(where, 0), 0u) << "expected " << where << " in: " << m;
    return m;
  }
  Instance baseline_instance(const UserKernelSpec& s) {
    auto space = make_space(s);
    EXPECT_TRUE(space.ok()) << space.error().message();
    auto inst = instantiate(s, space->config(space->baseline()));
    EXPECT_TRUE(inst.ok()) << inst.error().message();
    return inst ? std::move(inst).value() : Instance{};
  }

  TempDir dir_;
};

#define EXPECT_SAYS(message, part)                   \
  EXPECT_NE((message).find(part), std::string::npos) \
      << "missing '" << (part) << "' in: " << (message)

// ---- constant memory ----------------------------------------------------------------------

TEST_F(SpecFeatures, ConstantMemoryArgumentsAreNotKernelParameters) {
  auto s = load_ok(spec_with(
      {kIn, "{name: d_filter, type: float32, buffer: input, size: 17*17, memory: constant}",
       "{name: weights, type: int32, buffer: input, size: 4, memory: constant, symbol: taps}"}));
  ASSERT_EQ(s.args.size(), 5u);
  EXPECT_TRUE(s.args[2].constant_memory);
  EXPECT_EQ(s.args[2].symbol, "d_filter");  // the argument's name by default
  EXPECT_EQ(s.args[3].symbol, "taps");
  EXPECT_FALSE(s.args[1].constant_memory);

  Instance inst = baseline_instance(s);
  ASSERT_EQ(inst.args.size(), 3u);  // out, in, n: what cuLaunchKernel gets
  EXPECT_EQ(inst.args[0].name, "out");
  EXPECT_EQ(inst.args[1].name, "in");
  EXPECT_EQ(inst.args[2].name, "n");
  EXPECT_EQ(inst.args[2].spec_index, 4u);
  ASSERT_EQ(inst.constant_args.size(), 2u);
  EXPECT_EQ(inst.constant_args[0].symbol, "d_filter");
  EXPECT_EQ(inst.constant_args[0].elements, 289);
  EXPECT_EQ(inst.constant_args[0].bytes, 289 * 4);
  EXPECT_EQ(inst.constant_args[0].spec_index, 2u);
  EXPECT_EQ(inst.constant_args[1].symbol, "taps");
  EXPECT_EQ(inst.constant_args[1].spec_index, 3u);

  // The reference kernel's module has the same symbols to fill.
  auto ref = instantiate_reference(s);
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  EXPECT_EQ(ref->args.size(), 3u);
  ASSERT_EQ(ref->constant_args.size(), 2u);
  EXPECT_EQ(ref->constant_args[1].symbol, "taps");

  // Another argument list is another launch: the problem's key changes.
  auto plain =
      load_ok(spec_with({kIn, "{name: d_filter, type: float32, buffer: input, size: 289}"}));
  EXPECT_NE(make_problem(s).structural_key(), make_problem(plain).structural_key());
}

TEST_F(SpecFeatures, ConstantMemoryMistakesAreOneLine) {
  EXPECT_SAYS(refused(spec_with({kIn,
                                 "{name: d_filter, type: float32, buffer: output, size: 289, "
                                 "memory: constant}"}),
                      10),
              "memory: constant needs buffer: input");
  EXPECT_SAYS(refused(spec_with({kIn,
                                 "{name: d_filter, type: float32, buffer: input, size: 289, "
                                 "memory: texture}"}),
                      10),
              "'texture' must be 'global'");
  EXPECT_SAYS(refused(spec_with({kIn,
                                 "{name: d_filter, type: float32, buffer: input, size: 289, "
                                 "symbol: taps}"}),
                      10),
              "symbol only applies with memory: constant");
  EXPECT_SAYS(refused(spec_with({kIn,
                                 "{name: coeffs, type: float32, buffer: input, size: 289, "
                                 "memory: constant}"}),
                      10),
              "the __constant__ symbol 'coeffs' does not appear in");
  EXPECT_SAYS(refused(spec_with({"{name: n2, type: int32, scalar: n, memory: constant}"}), 9),
              "memory only applies to buffers");
  // The reference's own source must have the symbol too.
  write_bytes(dir_.file("ref.cu"), "extern \"C\" __global__ void conv_ref(float* o) {}\n");
  std::string yaml = spec_with(
      {kIn, "{name: d_filter, type: float32, buffer: input, size: 289, memory: constant}"});
  yaml.replace(yaml.find("{name: conv_ref,"), 16, "{name: conv_ref, file: ref.cu,");
  EXPECT_SAYS(refused(yaml, 12), "the reference reads its constant memory too");
  // 64 KiB of constant memory: known once the sizes are.
  auto big = load_ok(spec_with(
      {kIn, "{name: d_filter, type: float32, buffer: input, size: n * 64, memory: constant}"}));
  auto space = make_space(big);
  ASSERT_FALSE(space.ok());
  EXPECT_EQ(space.error().message().find('\n'), std::string::npos);
  EXPECT_SAYS(space.error().message(), "conv.yaml:10:");
  EXPECT_SAYS(space.error().message(), "constant memory holds at most 64 KiB");
}

// ---- fills --------------------------------------------------------------------------------

TEST_F(SpecFeatures, ConstantAndFileFillsGiveFixedBytes) {
  auto s = load_ok(
      spec_with({"{name: in, type: float32, buffer: input, size: n, fill: {constant: 1.5}}",
                 "{name: d_filter, type: float32, buffer: input, size: 17*17, memory: constant, "
                 "fill: {file: f4_289.npy}}",
                 "{name: weights, type: int32, buffer: input, size: 4, fill: {file: taps.npy}}",
                 "{name: bias, type: float16, buffer: inout, size: 3, fill: {constant: -2}}",
                 "{name: noise, type: int32, buffer: input, size: 8, range: [0, 9]}"}));
  EXPECT_EQ(s.args[1].fill.kind, FillKind::kConstant);
  EXPECT_EQ(s.args[1].fill.constant, 1.5);
  EXPECT_EQ(s.args[2].fill.kind, FillKind::kFile);
  EXPECT_EQ(s.args[2].fill.file, dir_.path() / "f4_289.npy");  // relative to the spec
  EXPECT_EQ(s.args[2].fill.file_elements, 289);
  EXPECT_EQ(s.args[5].fill.kind, FillKind::kRandom);
  EXPECT_EQ(s.args[5].range, (std::pair<double, double>{0, 9}));

  Instance inst = baseline_instance(s);
  ASSERT_EQ(inst.args.size(), 6u);
  auto in = fixed_bytes(inst.args[1]);
  ASSERT_TRUE(in.ok()) << in.error().message();
  ASSERT_EQ(in->size(), 289u * 4);
  float x = 0;
  std::memcpy(&x, in->data() + 4 * 100, 4);
  EXPECT_EQ(x, 1.5f);

  ASSERT_EQ(inst.constant_args.size(), 1u);
  auto filter = fixed_bytes(inst.constant_args[0]);
  ASSERT_TRUE(filter.ok()) << filter.error().message();
  ASSERT_EQ(filter->size(), 289u * 4);
  std::memcpy(&x, filter->data() + 4 * 288, 4);
  EXPECT_EQ(x, 0.25f * 288);

  auto taps = fixed_bytes(inst.args[2]);
  ASSERT_TRUE(taps.ok()) << taps.error().message();
  std::int32_t t[4];
  std::memcpy(t, taps->data(), 16);
  EXPECT_EQ(t[1], -2);
  EXPECT_EQ(t[3], -4);

  auto bias = fixed_bytes(inst.args[3]);
  ASSERT_TRUE(bias.ok()) << bias.error().message();
  ASSERT_EQ(bias->size(), 6u);
  EXPECT_EQ((*bias)[4], 0x00);  // -2.0 in fp16 is 0xc000, little-endian
  EXPECT_EQ((*bias)[5], 0xc0);

  // Random inputs are drawn per check from a seed, on the device: no fixed bytes.
  auto noise = fixed_bytes(inst.args[4]);
  ASSERT_FALSE(noise.ok());
  EXPECT_SAYS(noise.error().message(), "argument 'noise' has random values");

  // The same values for the reference.
  auto ref = instantiate_reference(s);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(*fixed_bytes(ref->constant_args[0]), *filter);

  // A file changed since the load is refused, not read past its end.
  write_bytes(dir_.file("f4_289.npy"), npy("<f4", "(289,)", bytes_of(std::vector<float>(3))));
  auto gone = fixed_bytes(inst.constant_args[0]);
  ASSERT_FALSE(gone.ok());
  EXPECT_SAYS(gone.error().message(), "shorter than when the spec was loaded");
}

TEST_F(SpecFeatures, FillMistakesAreOneLine) {
  auto arg = [](const std::string& fill, const std::string& type = "float32",
                const std::string& role = "input") {
    return spec_with(
        {"{name: in, type: " + type + ", buffer: " + role + ", size: n, " + fill + "}"});
  };
  EXPECT_SAYS(refused(arg("fill: zeros"), 9), "must be 'random' (the default), {constant: 1.5}");
  EXPECT_SAYS(refused(arg("fill: {constant: 1}", "float32", "output"), 9),
              "fill only applies to input and inout buffers");
  EXPECT_SAYS(refused(arg("fill: {constant: 1.5}", "int32"), 9), "1.5 is not an integer");
  EXPECT_SAYS(refused(arg("fill: {constant: 300}", "uint8"), 9), "300 does not fit in uint8");
  EXPECT_SAYS(refused(arg("fill: {constant: 70000}", "float16"), 9), "does not fit in float16");
  EXPECT_SAYS(refused(arg("fill: {constant: x}"), 9), "'x' is not a number");
  EXPECT_SAYS(refused(arg("range: [0, 1], fill: {constant: 2}"), 9),
              "range only applies to fill: random");
  EXPECT_SAYS(refused(arg("fill: {constant: 1, file: f4_289.npy}"), 9), ".fill must be");
  EXPECT_SAYS(refused(arg("fill: {file: nope.npy}"), 9), "does not exist");
  EXPECT_SAYS(refused(arg("fill: {file: f8_289.npy}"), 9),
              "holds dtype '<f8', but the argument is float32 ('<f4')");
  EXPECT_SAYS(refused(arg("fill: {file: fortran.npy}"), 9), "is in Fortran order");
  EXPECT_SAYS(refused(arg("fill: {file: short.npy}"), 9), "is cut short");
  EXPECT_SAYS(refused(arg("fill: {file: text.npy}"), 9), "is not a NumPy .npy file");
  // The element count is checked once the sizes are known (--problem may change them).
  auto s = load_ok(arg("fill: {file: f4_100.npy}"));
  auto space = make_space(s);
  ASSERT_FALSE(space.ok());
  EXPECT_EQ(space.error().message().find('\n'), std::string::npos);
  EXPECT_SAYS(space.error().message(), "conv.yaml:9:");
  EXPECT_SAYS(space.error().message(), "holds 100 elements, but its size 'n' is 289");
  ASSERT_TRUE(set_problem_sizes(s, "n=100").ok());
  EXPECT_TRUE(make_space(s).ok());
}

TEST_F(SpecFeatures, AFixedFillIsPartOfTheProblemsKey) {
  auto random = load_ok(spec_with({kIn}));
  auto constant =
      load_ok(spec_with({"{name: in, type: float32, buffer: input, size: n, "
                         "fill: {constant: 1}}"}));
  auto file =
      load_ok(spec_with({"{name: in, type: float32, buffer: input, size: n, "
                         "fill: {file: f4_289.npy}}"}));
  auto random_explicit =
      load_ok(spec_with({"{name: in, type: float32, buffer: input, size: n, "
                         "fill: random}"}));
  EXPECT_NE(make_problem(random).structural_key(), make_problem(constant).structural_key());
  EXPECT_NE(make_problem(random).structural_key(), make_problem(file).structural_key());
  // 'fill: random' is the default: the same problem, and every stored result still applies.
  EXPECT_EQ(make_problem(random).structural_key(), make_problem(random_explicit).structural_key());
}

// ---- metrics and the objective ------------------------------------------------------------

TEST_F(SpecFeatures, MetricsAreRealArithmeticOfTheTimeAndTheSizes) {
  auto s = load_ok(spec_with({kIn},
                             "metrics:\n"
                             "  gflops: \"2 * n * n * n / (time_s * 1e9)\"\n"
                             "  gbs: \"(n + n) * 4 / 1e9 / time_s\"\n"
                             "  per_element_ns: \"time_us * 1000 / n\"\n"
                             "  half: \"n / 2 / time_ms\"\n"
                             "objective: {metric: gflops, higher_is_better: true}\n"));
  ASSERT_EQ(s.metrics.size(), 4u);
  EXPECT_EQ(s.objective.metric, "gflops");
  EXPECT_TRUE(s.objective.higher_is_better);
  auto m = evaluate_metrics(s, 10.0);  // 10 us
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].first, "gflops");
  EXPECT_DOUBLE_EQ(m[0].second, 2.0 * 289 * 289 * 289 / (1e-5 * 1e9));
  EXPECT_DOUBLE_EQ(m[1].second, 578.0 * 4 / 1e9 / 1e-5);
  EXPECT_DOUBLE_EQ(m[2].second, 10.0 * 1000 / 289);
  EXPECT_DOUBLE_EQ(m[3].second, 289.0 / 2 / 0.01);  // '/' divides exactly in a metric
  // At other sizes (a problem of --problem), the metric follows.
  ASSERT_TRUE(set_problem_sizes(s, "n=1000").ok());
  EXPECT_DOUBLE_EQ(evaluate_metrics(s, 10.0)[0].second, 2e9 / 1e4);
  // The default objective is the time.
  auto plain = load_ok(spec_with({kIn}));
  EXPECT_TRUE(plain.objective.metric.empty());
  EXPECT_FALSE(plain.objective.higher_is_better);
  EXPECT_TRUE(evaluate_metrics(plain, 1.0).empty());
  // A lower-is-better metric that grows with time is a fine objective too.
  auto lower = load_ok(spec_with({kIn},
                                 "metrics: {ns: \"time_us * 1000\"}\n"
                                 "objective: {metric: ns, higher_is_better: false}\n"));
  EXPECT_EQ(lower.objective.metric, "ns");
  auto time = load_ok(spec_with({kIn}, "objective: time\n"));
  EXPECT_TRUE(time.objective.metric.empty());
}

TEST_F(SpecFeatures, MetricAndObjectiveMistakesAreOneLine) {
  EXPECT_SAYS(refused(spec_with({kIn}, "metrics: {gflops: \"block_size / time_s\"}\n"), 12),
              "reads knob 'block_size'");
  EXPECT_SAYS(refused(spec_with({kIn}, "metrics: {gflops: \"m / time_s\"}\n"), 12),
              "unknown name 'm'");
  EXPECT_SAYS(refused(spec_with({kIn}, "metrics: {gflops: \"n / tme_s\"}\n"), 12),
              "did you mean 'time_s'?");
  EXPECT_SAYS(refused(spec_with({kIn}, "metrics: {gflops: \"n / (time_s\"}\n"), 12),
              "expected ')'");
  EXPECT_SAYS(refused(spec_with({kIn}, "metrics: {n: \"n / time_s\"}\n"), 12),
              "already the name of the time, a size or a knob");
  EXPECT_SAYS(refused(spec_with({kIn},
                                "metrics: {g: \"n / time_s\"}\n"
                                "objective: {metric: gflops, higher_is_better: true}\n"),
                      13),
              "'gflops' is not one of the spec's metrics; declared: g");
  EXPECT_SAYS(refused(spec_with({kIn}, "objective: gflops\n"), 12),
              "'time' (the default) or {metric: NAME");
  EXPECT_SAYS(refused(spec_with({kIn},
                                "metrics: {g: \"n / time_s\"}\n"
                                "objective: {metric: g, higher_is_better: maybe}\n"),
                      13),
              "must be true or false");
  // The search ranks by time: an objective must be strictly monotonic in it, in its direction.
  const std::string grows = "metrics: {g: \"n * time_s\"}\n";
  std::string m =
      refused(spec_with({kIn}, grows + "objective: {metric: g, higher_is_better: true}\n"), 13);
  EXPECT_SAYS(m, "does not fall strictly as the time grows");
  EXPECT_SAYS(m, "strictly monotonic function");
  EXPECT_SAYS(refused(spec_with({kIn},
                                "metrics: {g: \"n / time_s\"}\n"
                                "objective: {metric: g}\n"),
                      13),
              "does not grow strictly as the time grows");
  EXPECT_SAYS(refused(spec_with({kIn},
                                "metrics: {g: \"n * 2.0\"}\n"
                                "objective: {metric: g, higher_is_better: true}\n"),
                      13),
              "does not fall strictly");
  EXPECT_SAYS(refused(spec_with({kIn},
                                "metrics: {g: \"(time_us - 5) ** 2\"}\n"
                                "objective: {metric: g}\n"),
                      13),
              "does not grow strictly");
  // Checked again at the sizes a --problem sets: (n - 100) / time_s falls with time only for
  // n > 100.
  auto s = load_ok(spec_with({kIn},
                             "metrics: {g: \"(n - 100) / time_s\"}\n"
                             "objective: {metric: g, higher_is_better: true}\n"));
  ASSERT_TRUE(set_problem_sizes(s, "n=50").ok());
  auto space = make_space(s);
  ASSERT_FALSE(space.ok());
  EXPECT_SAYS(space.error().message(), "conv.yaml:13:");
  EXPECT_SAYS(space.error().message(), "problem n=50");
}

// ---- restrictions as Kernel Tuner writes them, and the census -------------------------------

// Kernel Tuner's matmul example: its tune_params and restriction, and its count of 40 configs
// once blocks of more than 1024 threads are dropped.
const char* kMatmul = R"yaml(
kernel: conv
problem: {n: 4096}
knobs:
  block_size_x: {values: [16, 32, 64], default: 16}
  block_size_y: {values: [1, 2, 4, 8, 16, 32], default: 16}
  tile_size_x: {values: [1, 2, 4, 8], default: 1}
  tile_size_y: {values: [1, 2, 4, 8], default: 1}
constraints: "block_size_x == block_size_y * tile_size_y"
grid: ["ceil_div(n, block_size_x * tile_size_x)", "ceil_div(n, block_size_y * tile_size_y)"]
block: [block_size_x, block_size_y]
args:
  - {name: out, type: float32, buffer: output, size: n}
  - {name: n, type: int32, scalar: n}
reference: {kernel: {name: conv_ref, grid: [1], block: [1]}}
)yaml";

TEST_F(SpecFeatures, OneConstraintStringAndTheMatmulCensus) {
  auto s = load_ok(kMatmul);
  ASSERT_EQ(s.constraints.size(), 1u);
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  SpaceCensus c = census(s, *space, true);
  EXPECT_EQ(c.cartesian, 288);
  // 11 (block_size_x, block_size_y, tile_size_y) meet the restriction, times 4 tile_size_x.
  EXPECT_EQ(c.legal, 44u);
  EXPECT_EQ(c.unlaunchable, 4u);   // 64 x 32 = 2048 threads, for each tile_size_x
  EXPECT_EQ(c.launchable(), 40u);  // Kernel Tuner's count
  ASSERT_EQ(c.configs.size(), 40u);
  EXPECT_EQ(c.configs[0].text(), "block_size_x=16,block_size_y=16,tile_size_x=1,tile_size_y=1");
  ASSERT_EQ(c.refused.size(), 4u);
  EXPECT_SAYS(c.refused[0].second, "at most 1024 per block");
  // Without keep_configs, only the counts.
  SpaceCensus counts = census(s, *space, false);
  EXPECT_EQ(counts.launchable(), 40u);
  EXPECT_TRUE(counts.configs.empty());
}

TEST_F(SpecFeatures, PythonStyleRestrictionsInASpec) {
  std::string yaml = kMatmul;
  yaml.replace(yaml.find("constraints: \""),
               std::string("constraints: \"block_size_x == block_size_y * tile_size_y\"").size(),
               "constraints:\n"
               "  - \"block_size_x == block_size_y * tile_size_y\"\n"
               "  - \"1 <= tile_size_x <= 4 and tile_size_y in (1, 2, 4, 8)\"\n"
               "  - \"block_size_x * block_size_y <= 2 ** 10\"\n"
               "  - \"block_size_x // tile_size_x >= 4 or False\"");
  auto s = load_ok(yaml);
  ASSERT_EQ(s.constraints.size(), 4u);
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  // tile_size_x 8 goes; block_size_x 16 with tile_size_x 4 stays (16 // 4 = 4); 1024 threads max.
  SpaceCensus c = census(s, *space, false);
  EXPECT_EQ(c.unlaunchable, 0u);
  EXPECT_EQ(c.legal, 30u);
}

}  // namespace
}  // namespace attune::user
