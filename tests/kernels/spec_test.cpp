#include "kernels/user/spec.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace attune::user {
namespace {

using attune::testing::TempDir;
using attune::testing::write_bytes;

const char* kSource = R"(
extern "C" __global__ void vector_add(float* c, const float* a, int n) {}
extern "C" __global__ void vector_add_ref(float* c, const float* a, int n) {}
template <typename T, int B> __global__ void scaled(T* c, int n) {}
)";

// A valid spec, one line per entry; the bad-input cases below edit single lines, so the line
// numbers in their expected messages are the numbers here.
std::vector<std::string> base_lines() {
  return {
      "kernel: vector_add",                                                            // 1
      "problem: {n: 1000}",                                                            // 2
      "knobs:",                                                                        // 3
      "  block_size: {values: [64, 128, 256], default: 128}",                          // 4
      "  items: {values: [1, 2, 4], default: 1}",                                      // 5
      "constraints: [\"block_size * items <= 512\"]",                                  // 6
      "grid: [\"ceil_div(n, block_size * items)\"]",                                   // 7
      "block: [block_size]",                                                           // 8
      "args:",                                                                         // 9
      "  - {name: c, type: float32, buffer: output, size: n}",                         // 10
      "  - {name: a, type: float32, buffer: input, size: n}",                          // 11
      "  - {name: n, type: int32, scalar: n}",                                         // 12
      "reference:",                                                                    // 13
      "  kernel: {name: vector_add_ref, grid: [\"ceil_div(n, 256)\"], block: [256]}",  // 14
  };
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// The base spec with line `line` (1-based) replaced; "" deletes nothing but blanks it.
std::string with_line(int line, const std::string& text) {
  auto lines = base_lines();
  if (line > static_cast<int>(lines.size())) {
    lines.resize(static_cast<std::size_t>(line));
  }
  lines[static_cast<std::size_t>(line - 1)] = text;
  return join_lines(lines);
}

class SpecTest : public ::testing::Test {
 protected:
  void SetUp() override { write_bytes(dir_.file("kernel.cu"), kSource); }

  std::filesystem::path spec_path() const { return dir_.path() / "x.yaml"; }

  Result<UserKernelSpec> load(const std::string& yaml) {
    write_bytes(spec_path().string(), yaml);
    return load_spec(spec_path(), dir_.path() / "kernel.cu");
  }
  UserKernelSpec load_ok(const std::string& yaml) {
    auto s = load(yaml);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return s ? std::move(s).value() : UserKernelSpec{};
  }

  TempDir dir_;
};

// ---- the complete example --------------------------------------------------------------------

std::filesystem::path example(const char* name) {
  return std::filesystem::path(ATTUNE_SOURCE_DIR) / "examples" / "user-kernel" / name;
}

TEST(UserKernelExample, VectorAddLoadsWithItsSourceFromTheSpecDirectory) {
  auto spec = load_spec(example("vector_add.yaml"), example("vector_add.cu"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  EXPECT_EQ(spec->kernel, "vector_add");
  EXPECT_EQ(spec->description, "c = a + b over n floats");
  ASSERT_EQ(spec->problem.size(), 1u);
  EXPECT_EQ(spec->problem[0], (std::pair<std::string, std::int64_t>{"n", 10000000}));
  ASSERT_EQ(spec->knobs.size(), 2u);
  EXPECT_EQ(spec->knobs[0].name, "block_size");
  EXPECT_EQ(spec->knobs[0].define, "BLOCK_SIZE");
  EXPECT_EQ(spec->knobs[0].values[spec->knobs[0].default_index], Value(256));
  EXPECT_EQ(spec->knobs[1].define, "ITEMS_PER_THREAD");
  EXPECT_EQ(spec->pass_knobs_as, KnobPassing::kDefines);
  ASSERT_EQ(spec->args.size(), 4u);
  EXPECT_EQ(spec->args[0].role, ArgRole::kOutput);
  EXPECT_EQ(spec->args[3].role, ArgRole::kScalar);
  ASSERT_TRUE(std::holds_alternative<ReferenceKernel>(spec->reference));
  const auto& ref = std::get<ReferenceKernel>(spec->reference);
  EXPECT_EQ(ref.name, "vector_add_ref");
  EXPECT_EQ(ref.source, spec->source);
  EXPECT_EQ(spec->tolerance.rtol, 1e-6);

  auto space = make_space(*spec);
  ASSERT_TRUE(space.ok()) << space.error().message();
  // 5 x 4 = 20 configs; block_size * items_per_thread <= 4096 drops 1024 x 8.
  EXPECT_EQ(space->cartesian_size(), 20);
  EXPECT_EQ(space->count(), 19u);
  ASSERT_EQ(space->constraints().size(), 1u);
  EXPECT_EQ(space->constraints()[0].knobs,
            (std::vector<std::string>{"block_size", "items_per_thread"}));
  Config baseline = space->config(space->baseline());
  EXPECT_EQ(baseline.text(), "block_size=256,items_per_thread=1");

  auto inst = instantiate(*spec, baseline);
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(inst->name_expression, "vector_add");
  EXPECT_EQ(inst->compile_options,
            (std::vector<std::string>{"-DBLOCK_SIZE=256", "-DITEMS_PER_THREAD=1"}));
  EXPECT_EQ(inst->launch.grid, (std::array<std::int64_t, 3>{39063, 1, 1}));  // ceil(1e7 / 256)
  EXPECT_EQ(inst->launch.block, (std::array<std::int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(inst->launch.shared_memory_bytes, 0);
  ASSERT_EQ(inst->args.size(), 4u);
  EXPECT_EQ(inst->args[0].elements, 10000000);
  EXPECT_EQ(inst->args[0].bytes, 40000000);
  EXPECT_EQ(inst->args[3].elements, 1);
  EXPECT_EQ(inst->args[3].bytes, 4);
  std::int32_t n = 0;
  std::memcpy(&n, inst->args[3].scalar_bytes.data(), 4);
  EXPECT_EQ(n, 10000000);

  auto other = space->parse("block_size=512,items_per_thread=8");
  ASSERT_TRUE(other.ok());
  auto inst2 = instantiate(*spec, *other);
  ASSERT_TRUE(inst2.ok());
  EXPECT_EQ(inst2->launch.grid[0], 2442);  // ceil(1e7 / 4096)
  EXPECT_EQ(inst2->compile_options[1], "-DITEMS_PER_THREAD=8");

  auto ref_inst = instantiate_reference(*spec);
  ASSERT_TRUE(ref_inst.ok()) << ref_inst.error().message();
  EXPECT_EQ(ref_inst->name_expression, "vector_add_ref");
  // The baseline's macros, because vector_add.cu refuses to compile without them.
  EXPECT_EQ(ref_inst->compile_options,
            (std::vector<std::string>{"-DBLOCK_SIZE=256", "-DITEMS_PER_THREAD=1"}));
  EXPECT_EQ(ref_inst->launch.grid[0], 39063);
  EXPECT_EQ(ref_inst->launch.block[0], 256);

  Problem p = make_problem(*spec);
  EXPECT_EQ(p.op(), "user");
  EXPECT_EQ(*p.attr("kernel"), "vector_add");
  EXPECT_EQ(*p.attr("n"), "10000000");
  EXPECT_NE(p.attr("source"), nullptr);
  EXPECT_EQ(p.name(), "vector_add:n=10000000");
}

TEST(UserKernelExample, SpecsNameTheirSourceSoKernelIsOptional) {
  for (const char* name : {"vector_add.yaml", "transpose.yaml", "convolution.yaml"}) {
    auto spec = load_spec(example(name));
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_FALSE(spec->source.empty());
  }
}

TEST(UserKernelExample, TransposeIsTwoDimensionalWithTemplateKnobsAndDynamicSharedMemory) {
  auto spec = load_spec(example("transpose.yaml"), example("transpose.cu"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  EXPECT_EQ(spec->pass_knobs_as, KnobPassing::kTemplate);
  auto space = make_space(*spec);
  ASSERT_TRUE(space.ok()) << space.error().message();
  // tile 16: block_rows 1..16 (5), tile 32: 1..32 (6), tile 64: 1..16 (5, 64 x 32 > 1024); x 2
  // pads.
  EXPECT_EQ(space->count(), 32u);
  auto inst = instantiate(*spec, space->config(space->baseline()));
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(inst->name_expression, "transpose_tiled<32, 8, 1>");
  EXPECT_TRUE(inst->compile_options.empty());
  EXPECT_EQ(inst->launch.grid, (std::array<std::int64_t, 3>{64, 128, 1}));  // 2047/32, 4093/32
  EXPECT_EQ(inst->launch.block, (std::array<std::int64_t, 3>{32, 8, 1}));
  EXPECT_EQ(inst->launch.shared_memory_bytes, 32 * 33 * 4);
  EXPECT_EQ(inst->args[0].elements, 4093 * 2047);

  auto big = space->parse("tile=64,block_rows=16,pad=0");
  ASSERT_TRUE(big.ok());
  auto inst_big = instantiate(*spec, *big);
  ASSERT_TRUE(inst_big.ok());
  EXPECT_EQ(inst_big->launch.shared_memory_bytes, 64 * 64 * 4);
  EXPECT_EQ(inst_big->launch.threads_per_block(), 1024);

  auto gate = gate_tolerance(*spec, 0);
  ASSERT_TRUE(gate.ok());
  EXPECT_EQ(gate->rtol, 0.0);
  EXPECT_EQ(gate->dtype, "fp32");

  auto ref = instantiate_reference(*spec);
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  EXPECT_EQ(ref->launch.grid, (std::array<std::int64_t, 3>{128, 256, 1}));
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(UserKernelExample, ConvolutionIsALargeSpaceWithAConstantFilterAndProblemDefines) {
  auto spec = load_spec(example("convolution.yaml"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto space = make_space(*spec);
  ASSERT_TRUE(space.ok()) << space.error().message();
  // 6 x 5 x 3 x 4 x 2 x 2 x 2 = 2880, less blocks outside 64..1024 threads and tiles past 48 KiB
  // (counted independently in Python from the same rules).
  EXPECT_EQ(space->count(), 2048u);
  auto inst = instantiate(*spec, space->config(space->baseline()));
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_TRUE(has(inst->compile_options, "-DBLOCK_SIZE_X=32")) << inst->compile_options.size();
  EXPECT_TRUE(has(inst->compile_options, "-DFILTER_W=17"));
  EXPECT_EQ(inst->launch.grid, (std::array<std::int64_t, 3>{128, 512, 1}));
  EXPECT_EQ(inst->launch.shared_memory_bytes, (32 + 16) * (8 + 16) * 4);
  // The filter is a __constant__ symbol, not a parameter: out, in, w, h.
  ASSERT_EQ(inst->args.size(), 4u);
  EXPECT_EQ(inst->args[1].elements, 4112 * 4112);
  ASSERT_EQ(inst->constant_args.size(), 1u);
  EXPECT_EQ(inst->constant_args[0].symbol, "d_filter");
  EXPECT_EQ(inst->constant_args[0].elements, 17 * 17);

  // A copied filter and padding count in the shared memory a config asks for.
  auto big = space->parse(
      "block_size_x=128,block_size_y=2,tile_size_x=1,tile_size_y=8,use_padding=1,filter_smem=1,"
      "unroll_fy=2");
  ASSERT_TRUE(big.ok()) << big.error().message();
  auto inst_big = instantiate(*spec, *big);
  ASSERT_TRUE(inst_big.ok()) << inst_big.error().message();
  EXPECT_EQ(inst_big->launch.shared_memory_bytes, ((128 + 16 + 1) * (16 + 16) + 17 * 17) * 4);

  // The reference compiles with the problem's filter size too (its __constant__ array's).
  auto ref = instantiate_reference(*spec);
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  EXPECT_TRUE(has(ref->compile_options, "-DFILTER_H=17"));
  auto gate = gate_tolerance(*spec, 0);
  ASSERT_TRUE(gate.ok()) << gate.error().message();
  EXPECT_EQ(gate->reduction_length, 17 * 17);  // an fp32 sum of 289 products
  EXPECT_EQ(gate->dtype, "fp32");
}

// ---- bad input: one line naming file:line and what would be right ---------------------------

struct BadCase {
  const char* name;
  std::string yaml;
  int line;                       // expected line in the message
  std::vector<std::string> says;  // substrings of the message
};

class BadSpec : public SpecTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadSpec, IsOneLineWithFileAndLine) {
  const BadCase& c = GetParam();
  auto s = load(c.yaml);
  ASSERT_FALSE(s.ok()) << c.name << " loaded";
  const std::string& m = s.error().message();
  EXPECT_EQ(s.error().kind(), Error::Kind::kInvalidArgument) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  const std::string where = spec_path().string() + ":" + std::to_string(c.line) + ":";
  EXPECT_EQ(m.rfind(where, 0), 0u) << "expected to start with " << where << "\n  got: " << m;
  for (const auto& part : c.says)
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadSpec,
    ::testing::Values(
        BadCase{"UnknownTopLevelKey",
                with_line(8, "blok: [block_size]"),
                8,
                {"unknown key 'blok'", "did you mean 'block'?", "expected one of"}},
        BadCase{"UnknownKnobKey",
                with_line(4, "  block_size: {values: [64], defualt: 64}"),
                4,
                {"knob 'block_size'", "unknown key 'defualt'", "did you mean 'default'?"}},
        BadCase{"DefaultNotAmongValues",
                with_line(4, "  block_size: {values: [64, 128, 256], default: 96}"),
                4,
                {"default 96 is not among its values [64, 128, 256]"}},
        BadCase{"KnobWithoutValues",
                with_line(4, "  block_size: {default: 64}"),
                4,
                {"missing 'values'"}},
        BadCase{
            "DuplicateKnobValue", with_line(5, "  items: [1, 2, 2]"), 5, {"lists value 2 twice"}},
        BadCase{"RealKnobValue",
                with_line(5, "  items: [1, 2.5]"),
                5,
                {"'2.5' must be an integer or a C identifier"}},
        BadCase{
            "MissingKernel", with_line(1, "description: no kernel here"), 1, {"missing 'kernel'"}},
        BadCase{"MissingGrid", with_line(7, "description: no grid"), 1, {"missing 'grid'"}},
        BadCase{"MissingBufferSize",
                with_line(11, "  - {name: a, type: float32, buffer: input}"),
                11,
                {"args[1] 'a' is missing 'size'"}},
        BadCase{"GridDoesNotParse",
                with_line(7, "grid: [\"ceil_div(n, block_size\"]"),
                7,
                {"grid.x", "expected ')'", "column 23", "'ceil_div(n, block_size'"}},
        BadCase{"GridNamesUnknown",
                with_line(7, "grid: [\"ceil_div(n, blok_size)\"]"),
                7,
                {"grid.x: unknown name 'blok_size'", "did you mean 'block_size'?",
                 "known names: block_size, items, n"}},
        BadCase{"ConstraintNamesUnknown",
                with_line(6, "constraints: [\"block_size * item <= 512\"]"),
                6,
                {"constraints[0]: unknown name 'item'", "did you mean 'items'?"}},
        BadCase{"ConstraintDoesNotParse",
                with_line(6, "constraints: [\"block_size <= \"]"),
                6,
                {"constraints[0]", "expected a number, a name or '('"}},
        BadCase{"NoOutput",
                with_line(10, "  - {name: c, type: float32, buffer: input, size: n}"),
                10,
                {"no output to check", "'output' or 'inout'"}},
        BadCase{"UnknownType",
                with_line(11, "  - {name: a, type: float, buffer: input, size: n}"),
                11,
                {"unknown type 'float'", "did you mean 'float32'?", "bfloat16"}},
        BadCase{"UnknownRole",
                with_line(11, "  - {name: a, type: float32, buffer: in, size: n}"),
                11,
                {"'in' must be input, output, inout or scratch"}},
        BadCase{"BufferAndScalar",
                with_line(12, "  - {name: n, type: int32, scalar: n, buffer: input, size: n}"),
                12,
                {"exactly one of"}},
        BadCase{"BufferSizeReadsAKnob",
                with_line(11, "  - {name: a, type: float32, buffer: input, size: n * items}"),
                11,
                {"reads knob 'items'", "only scratch buffers may depend on knobs"}},
        BadCase{"DuplicateArg",
                with_line(12, "  - {name: a, type: int32, scalar: n}"),
                12,
                {"argument 'a' is listed twice"}},
        BadCase{"ReferenceReadsAKnob",
                with_line(14,
                          "  kernel: {name: vector_add_ref, grid: [\"ceil_div(n, block_size)\"], "
                          "block: [256]}"),
                14,
                {"reference.kernel.grid.x reads knob 'block_size'", "without knobs"}},
        BadCase{"ReferenceBothKinds",
                with_line(14,
                          "  {kernel: {name: vector_add_ref, grid: [1], block: [1]}, library: "
                          "{path: a.so, function: f}}"),
                14,
                {"exactly one of 'kernel' or 'library'"}},
        BadCase{"ReferenceLibraryMissing",
                with_line(14, "  library: {path: ./libnope.so, function: ref}"),
                14,
                {"libnope.so' does not exist"}},
        BadCase{"ReferenceKernelNotInSource",
                with_line(14, "  kernel: {name: vector_add_reff, grid: [1], block: [1]}"),
                14,
                {"'vector_add_reff' does not appear in"}},
        BadCase{"KernelNotInSource",
                with_line(1, "kernel: vector_sub"),
                1,
                {"kernel: 'vector_sub' does not appear in"}},
        BadCase{"BadPassKnobsAs",
                with_line(15, "pass_knobs_as: macros"),
                15,
                {"'macros' must be 'defines'", "or 'template'"}},
        BadCase{"TemplateArgsInDefinesMode",
                with_line(15, "template_args: [block_size]"),
                15,
                {"template_args only applies with pass_knobs_as: template"}},
        BadCase{"ProblemSizeNotInteger",
                with_line(2, "problem: {n: 1e3}"),
                2,
                {"problem.n: '1e3' is not an integer"}},
        BadCase{"KnobNamedLikeASize",
                with_line(5, "  n: [1, 2]"),
                5,
                {"knob 'n' has the name of a problem size"}},
        BadCase{"NegativeTolerance",
                with_line(15, "tolerance: {rtol: -1}"),
                15,
                {"tolerance.rtol: '-1' must be a number >= 0"}},
        BadCase{
            "DuplicateTopLevelKey", with_line(15, "grid: [1]"), 15, {"key 'grid' is given twice"}},
        BadCase{"WordKnobInAnExpression",
                with_line(5, "  items: {values: [one, two]}"),
                6,
                {"reads knob 'items'", "'one' is not an integer"}},
        BadCase{"NotYaml",
                with_line(4, "  block_size: {values: [64, 128, default: 128}"),
                4,
                {"not valid YAML"}},
        BadCase{
            "GridWithFourDimensions", with_line(7, "grid: [1, 1, 1, 1]"), 7, {"1 to 3 dimensions"}},
        BadCase{"ScalarNotAnExpression",
                with_line(12, "  - {name: n, type: int32, scalar: 0.5}"),
                12,
                {"args[2] 'n'.scalar",
                 "'0.5' is a real; expressions in a spec are integer arithmetic"}}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST_F(SpecTest, MissingReferenceIsNamed) {
  auto lines = base_lines();
  lines.resize(12);
  auto s = load(join_lines(lines));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.error().message().rfind(spec_path().string() + ":1:1: the spec is missing 'reference'", 0),
      0u)
      << s.error().message();
}

TEST_F(SpecTest, NoKernelSourceAnywhere) {
  write_bytes(spec_path().string(), join_lines(base_lines()));
  auto s = load_spec(spec_path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("pass --kernel my.cu or add 'source: my.cu'"),
            std::string::npos);
  auto missing = load_spec(spec_path(), dir_.path() / "nope.cu");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_NE(missing.error().message().find("nope.cu does not exist"), std::string::npos);
}

TEST_F(SpecTest, RelativePathsResolveAgainstTheSpecDirectory) {
  std::filesystem::create_directories(dir_.path() / "specs");
  write_bytes(dir_.file("libref.so"), "not really a library; only its presence is checked");
  auto lines = base_lines();
  lines[13] = "  library: {path: ../libref.so, function: vector_add_host}";
  lines.push_back("source: ../kernel.cu");
  auto path = dir_.path() / "specs" / "x.yaml";
  write_bytes(path.string(), join_lines(lines));
  auto s = load_spec(path);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->source, kSource);
  ASSERT_TRUE(std::holds_alternative<ReferenceLibrary>(s->reference));
  EXPECT_EQ(std::get<ReferenceLibrary>(s->reference).path,
            dir_.path() / "specs" / ".." / "libref.so");
  auto ref = instantiate_reference(*s);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->args.size(), 3u);
}

TEST_F(SpecTest, KnobShorthandDefaultsToTheFirstValueAndDefineCanBeRenamed) {
  auto s = load_ok(with_line(5, "  items: [2, 1, 4]") +
                   "defines: {TOTAL: block_size * items}\ncompile_options: [-use_fast_math]\n");
  ASSERT_EQ(s.knobs.size(), 2u);
  EXPECT_EQ(s.knobs[1].default_index, 0u);
  auto s2 = load_ok(with_line(4, "  block_size: {values: [64, 128], define: block_size_x}"));
  EXPECT_EQ(s2.knobs[0].define, "block_size_x");
  EXPECT_EQ(s2.knobs[0].default_index, 0u);

  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto inst = instantiate(s, space->config(space->baseline()));
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(inst->compile_options, (std::vector<std::string>{"-DBLOCK_SIZE=128", "-DITEMS=2",
                                                             "-DTOTAL=256", "-use_fast_math"}));
  // The reference gets the knobs' baseline macros and the extra defines, not the tuned
  // kernel's compile options.
  auto ref = instantiate_reference(s);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->compile_options,
            (std::vector<std::string>{"-DBLOCK_SIZE=128", "-DITEMS=2", "-DTOTAL=256"}));
}

TEST_F(SpecTest, KnobsThatReachTheKernelNowhere) {
  // kSource does not mention UNROLL, and no expression reads unroll: a warning, not an error
  // (a header could read the macro). Knobs read by the launch (block_size) matter anyway.
  auto lines = base_lines();
  lines.insert(lines.begin() + 5, "  unroll: [1, 2]");
  auto s = load_ok(join_lines(lines));
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0],
            spec_path().string() +
                ":6:3: warning: knob 'unroll': macro UNROLL "
                "does not appear in " +
                (dir_.path() / "kernel.cu").string() +
                "; unless a header reads it, the knob changes nothing (set 'define:' "
                "to the macro the kernel uses)");
  write_bytes(dir_.file("kernel.cu"), std::string(kSource) + "// #pragma unroll UNROLL\n");
  EXPECT_TRUE(load_ok(join_lines(lines)).warnings.empty());
  // With template arguments it is certain: an error.
  auto t = load(
      "kernel: scaled<float>\n"
      "problem: {n: 100}\n"
      "knobs: {block: [128, 256], unroll: [1, 2]}\n"
      "pass_knobs_as: template\n"
      "template_args: [block]\n"
      "grid: [1]\n"
      "block: [block]\n"
      "args: [{name: c, type: float32, buffer: output, size: n}]\n"
      "reference: {kernel: {name: vector_add_ref, grid: [1], block: [1]}}\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find(":3:28: knob 'unroll' reaches the kernel nowhere"),
            std::string::npos)
      << t.error().message();
}

TEST_F(SpecTest, KnobValuesAsRanges) {
  auto s =
      load_ok(with_line(4, "  block_size: {values: {from: 32, to: 256, step: 32}, default: 128}"));
  std::vector<std::string> texts;
  for (const auto& v : s.knobs[0].values) texts.push_back(v.text());
  EXPECT_EQ(texts, (std::vector<std::string>{"32", "64", "96", "128", "160", "192", "224", "256"}));
  EXPECT_EQ(s.knobs[0].default_index, 3u);
  auto g = load_ok(with_line(5, "  items: {values: {from: 1, to: 12, times: 2}}"));
  ASSERT_EQ(g.knobs[1].values.size(), 4u);  // 1 2 4 8
  EXPECT_EQ(g.knobs[1].values[3], Value(8));
  for (const char* bad : {"  items: {values: {from: 1, to: 8}}",
                          "  items: {values: {from: 1, to: 8, step: 1, times: 2}}",
                          "  items: {values: {from: 8, to: 1, step: 1}}",
                          "  items: {values: {from: 0, to: 8, times: 2}}",
                          "  items: {values: {from: 1, to: 8, step: 0}}",
                          "  items: {values: {from: 1, to: 100000, step: 1}}",
                          "  items: {values: {from: 1, upto: 8, step: 1}}"}) {
    auto r = load(with_line(5, bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message().rfind(spec_path().string() + ":5:", 0), 0u)
        << r.error().message();
  }
}

TEST_F(SpecTest, ConstraintsReadOnlyTheKnobsTheyName) {
  auto s = load_ok(with_line(6,
                             "constraints: [\"items <= 2\", \"block_size <= n\", "
                             "\"block_size * items <= 512\"]"));
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  ASSERT_EQ(space->constraints().size(), 3u);
  EXPECT_EQ(space->constraints()[0].knobs, std::vector<std::string>{"items"});
  EXPECT_EQ(space->constraints()[1].knobs, std::vector<std::string>{"block_size"});
  EXPECT_EQ(space->constraints()[2].knobs, (std::vector<std::string>{"block_size", "items"}));
  // items in {1, 2}; block_size * items <= 512 drops only 256 x 4, already gone: 3 x 2.
  EXPECT_EQ(space->count(), 6u);
}

TEST_F(SpecTest, ProblemSizesAreConstantsInConstraints) {
  auto s = load_ok(with_line(6, "constraints: [\"block_size * items <= n / 4\"]"));  // <= 250
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  EXPECT_EQ(space->count(), 3u);  // 64x1, 64x2, 128x1 (the baseline)
  ASSERT_TRUE(set_problem_sizes(s, "n=4000").ok());
  EXPECT_EQ(make_space(s)->count(), 8u);  // <= 1000: all but 256x4
}

TEST_F(SpecTest, AConstraintWithoutKnobsIsARequirementOnTheProblem) {
  auto s = load_ok(with_line(6, "constraints: [\"n % 8 == 0\"]"));
  auto ok = make_space(s);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_TRUE(ok->constraints().empty());
  EXPECT_EQ(ok->count(), 9u);
  ASSERT_TRUE(set_problem_sizes(s, "n=1001").ok());
  auto bad = make_space(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message().rfind(spec_path().string() + ":6:", 0), 0u)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("'n % 8 == 0' does not hold for problem n=1001"),
            std::string::npos);
}

TEST_F(SpecTest, IllegalDefaultsAreNamedAtTheConstraintsLine) {
  auto s = load_ok(with_line(6, "constraints: [\"items == 1\", \"block_size * items <= 64\"]"));
  auto space = make_space(s);
  ASSERT_FALSE(space.ok());
  EXPECT_EQ(
      space.error().message(),
      spec_path().string() +
          ":6:29: the defaults (block_size=128,items=1) violate "
          "constraint 'block_size * items <= 64' for problem n=1000; change a knob's default");
}

TEST_F(SpecTest, AConstraintComparesAWordKnobAsAString) {
  auto lines = base_lines();
  lines[4] = "  vec: {values: [float, float4], default: float}";
  lines[5] = "constraints: [\"vec == 'float' or block_size in [128, 256]\"]";
  lines[6] = "grid: [\"ceil_div(n, block_size)\"]";
  auto s = load_ok(join_lines(lines));
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  EXPECT_EQ(space->count(), 3u + 2u);  // float4 only with 128 or 256
  EXPECT_TRUE(instantiate(s, space->parse("block_size=128,vec=float4").value()).ok());
  auto r = instantiate(s, Config({{"block_size", Value(64)}, {"vec", Value("float4")}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("violates constraint"), std::string::npos)
      << r.error().message();

  // Only as a string: ordering it, or reading it in a launch expression, is refused at load.
  lines[5] = "constraints: [\"vec < 2\"]";
  auto order = load(join_lines(lines));
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.error().message().find("'<' needs numbers on both sides"), std::string::npos)
      << order.error().message();
  lines[5] = "constraints: []";
  lines[7] = "block: [vec]";
  auto launch = load(join_lines(lines));
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.error().message().find("only integer knobs can appear in expressions"),
            std::string::npos)
      << launch.error().message();
}

TEST_F(SpecTest, ExpressionsAreIntegerArithmetic) {
  auto real = load(with_line(7, "grid: [\"n * 0.5\"]"));
  ASSERT_FALSE(real.ok());
  EXPECT_NE(
      real.error().message().find("grid.x: 'n * 0.5' is a real; expressions in a spec are integer"),
      std::string::npos)
      << real.error().message();
  auto word = load(with_line(8, "block: [\"'x'\"]"));
  ASSERT_FALSE(word.ok());
  EXPECT_NE(word.error().message().find("is a string"), std::string::npos)
      << word.error().message();
  // The merged language's word forms and 'in' work in every expression.
  auto s = load_ok(with_line(6, "constraints: [\"not block_size == 64 and items in [1, 2]\"]"));
  EXPECT_EQ(make_space(s)->count(), 4u);
}

TEST_F(SpecTest, AConstraintThatCannotBeEvaluatedExcludesTheConfig) {
  auto s = load_ok(with_line(6, "constraints: [\"n / (block_size - 64) >= 0\"]"));
  auto space = make_space(s);
  // The baseline (128) is legal; block_size 64 divides by zero and is dropped.
  ASSERT_TRUE(space.ok()) << space.error().message();
  EXPECT_EQ(space->count(), 6u);
}

TEST_F(SpecTest, ImpossibleLaunchesAreUnsupportedData) {
  auto s = load_ok(with_line(7, "grid: [\"ceil_div(n, block_size) - 8\"]") +
                   "shared_memory_bytes: \"block_size * 64\"\n");
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto cfg = [&](const char* text) { return space->parse(text).value(); };
  // ceil(1000/128) - 8 = 0 blocks.
  auto r = instantiate(s, cfg("block_size=128,items=1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), Error::Kind::kUnsupported);
  EXPECT_NE(r.error().message().find("grid.x = ceil_div(n, block_size) - 8 = 0"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("block_size=128,items=1"), std::string::npos);
  EXPECT_EQ(unsupported_reason(s, cfg("block_size=128,items=1")), r.error().message());
  // ceil(1000/64) - 8 = 8 blocks.
  EXPECT_FALSE(unsupported_reason(s, cfg("block_size=64,items=1")).has_value());
  // Shared memory past the device's limit.
  LaunchLimits small;
  small.max_shared_memory_bytes = 4000;
  auto smem = unsupported_reason(s, cfg("block_size=64,items=2"), small);
  ASSERT_TRUE(smem.has_value());
  EXPECT_NE(smem->find("shared_memory_bytes = block_size * 64 = 4096"), std::string::npos) << *smem;
  EXPECT_FALSE(unsupported_reason(s, cfg("block_size=64,items=2")).has_value());
  // Too many threads per block.
  LaunchLimits few;
  few.max_threads_per_block = 64;
  auto threads = unsupported_reason(s, cfg("block_size=64,items=1"), few);
  EXPECT_FALSE(threads.has_value());
  auto s2 = load_ok(with_line(8, "block: [block_size, 2]"));
  auto threads2 =
      unsupported_reason(s2, make_space(s2)->parse("block_size=64,items=1").value(), few);
  ASSERT_TRUE(threads2.has_value());
  EXPECT_NE(threads2->find("128 threads"), std::string::npos) << *threads2;
}

TEST_F(SpecTest, AConfigOfAnotherSpaceIsInvalidNotUnsupported) {
  auto s = load_ok(join_lines(base_lines()));
  auto r = instantiate(s, Config::parse("block_size=96,items=1").value());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), Error::Kind::kInvalidArgument);
  EXPECT_NE(r.error().message().find("no value 96"), std::string::npos);
  auto r2 = instantiate(s, Config::parse("block_size=64").value());
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().kind(), Error::Kind::kInvalidArgument);
  // A config that breaks a constraint is refused as unsupported.
  auto r3 = instantiate(s, Config::parse("block_size=256,items=4").value());
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.error().kind(), Error::Kind::kUnsupported);
  EXPECT_NE(r3.error().message().find("violates constraint 'block_size * items <= 512'"),
            std::string::npos);
}

TEST_F(SpecTest, ScalarEncodings) {
  auto lines = base_lines();
  lines.insert(lines.begin() + 12, {"  - {name: alpha, type: float32, scalar: 0.5}",
                                    "  - {name: h, type: float16, scalar: 1}",
                                    "  - {name: bf, type: bfloat16, scalar: \"block_size / 64\"}",
                                    "  - {name: d, type: float64, scalar: -2.25}",
                                    "  - {name: u8, type: uint8, scalar: \"items * 100\"}"});
  auto s = load_ok(join_lines(lines));
  ASSERT_EQ(s.args.size(), 8u);
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto inst = instantiate(s, space->parse("block_size=128,items=2").value());
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  const auto& a = inst->args;
  float f = 0;
  std::memcpy(&f, a[3].scalar_bytes.data(), 4);
  EXPECT_EQ(f, 0.5f);
  EXPECT_EQ(a[3].bytes, 4);
  std::uint16_t h = 0;
  std::memcpy(&h, a[4].scalar_bytes.data(), 2);
  EXPECT_EQ(h, 0x3c00);  // 1.0 in binary16
  EXPECT_EQ(a[4].bytes, 2);
  std::memcpy(&h, a[5].scalar_bytes.data(), 2);
  EXPECT_EQ(h, 0x4000);  // 2.0 in bfloat16
  double d = 0;
  std::memcpy(&d, a[6].scalar_bytes.data(), 8);
  EXPECT_EQ(d, -2.25);
  EXPECT_EQ(a[7].scalar_bytes[0], 200);
  // 4 x 100 does not fit in a uint8: that config cannot run.
  auto overflow = unsupported_reason(s, space->parse("block_size=128,items=4").value());
  ASSERT_TRUE(overflow.has_value());
  EXPECT_NE(overflow->find("scalar 'u8' = 400 does not fit in uint8"), std::string::npos)
      << *overflow;
}

TEST_F(SpecTest, TemplateModeWithWordKnobs) {
  auto s = load_ok(
      "kernel: scaled\n"
      "problem: {n: 100}\n"
      "knobs:\n"
      "  type: {values: [float, double], default: float}\n"
      "  block: [128, 256]\n"
      "pass_knobs_as: template\n"
      "grid: [\"ceil_div(n, block)\"]\n"
      "block: [block]\n"
      "args:\n"
      "  - {name: c, type: float32, buffer: output, size: n}\n"
      "  - {name: n, type: int32, scalar: n}\n"
      "reference: {kernel: {name: vector_add_ref, grid: [1], block: [128]}}\n");
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  EXPECT_EQ(space->count(), 4u);
  auto inst = instantiate(s, space->parse("type=double,block=256").value());
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(inst->name_expression, "scaled<double, 256>");
  EXPECT_TRUE(inst->compile_options.empty());
  EXPECT_EQ(inst->launch.grid[0], 1);
}

TEST_F(SpecTest, TemplateArgsMayBeExpressionsAfterFixedArguments) {
  auto s = load_ok(
      "kernel: scaled<float>\n"
      "problem: {n: 100}\n"
      "knobs: {block: [128, 256]}\n"
      "pass_knobs_as: template\n"
      "template_args: [\"block * 2\"]\n"
      "grid: [1]\n"
      "block: [block]\n"
      "args: [{name: c, type: float32, buffer: output, size: n}]\n"
      "reference: {kernel: {name: vector_add_ref, grid: [1], block: [1]}}\n");
  auto space = make_space(s);
  ASSERT_TRUE(space.ok()) << space.error().message();
  auto inst = instantiate(s, space->config(space->baseline()));
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(inst->name_expression, "scaled<float, 256>");
}

TEST_F(SpecTest, ProblemOverridesChangeTheStructuralKey) {
  auto s = load_ok(join_lines(base_lines()));
  const std::string key = make_problem(s).structural_key();
  EXPECT_EQ(make_problem(s).name(), "vector_add:n=1000");
  ASSERT_TRUE(set_problem_sizes(s, "n=123").ok());
  EXPECT_EQ(*make_problem(s).attr("n"), "123");
  EXPECT_NE(make_problem(s).structural_key(), key);
  ASSERT_TRUE(set_problem_sizes(s, "n=1000").ok());
  EXPECT_EQ(make_problem(s).structural_key(), key);

  auto unknown = set_problem_sizes(s, "m=4");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("'m' is not a problem size"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("it declares: n"), std::string::npos);
  auto typo = set_problem_sizes(s, "nn=4");
  EXPECT_NE(typo.error().message().find("did you mean 'n'?"), std::string::npos);
  EXPECT_FALSE(set_problem_sizes(s, "n=big").ok());
  EXPECT_FALSE(set_problem_sizes(s, "n").ok());
}

TEST_F(SpecTest, AWorkerFindsTheSpecForAProblemAndItsSizes) {
  auto s = load_ok(join_lines(base_lines()));
  UserKernelSpec other = s;
  ASSERT_TRUE(set_problem_sizes(other, "n=77").ok());
  // What travels over the worker's pipe is the problem's text.
  auto p = Problem::parse(make_problem(other).text());
  ASSERT_TRUE(p.ok());
  auto served = spec_for_problem(s, *p);
  ASSERT_TRUE(served.ok()) << served.error().message();
  EXPECT_EQ(served->problem[0].second, 77);
  EXPECT_EQ(make_problem(*served).structural_key(), p->structural_key());

  write_bytes(dir_.file("kernel.cu"), std::string(kSource) + "// edited\n");
  auto edited = load_ok(join_lines(base_lines()));
  auto stale = spec_for_problem(edited, *p);
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.error().message().find("another source text"), std::string::npos);
  EXPECT_FALSE(spec_for_problem(s, Problem::parse("gemm:m=1").value()).ok());
  EXPECT_FALSE(spec_for_problem(s, Problem::parse("user:kernel=vector_add").value()).ok());
  // Sizes alone complete to this spec's problem.
  auto partial = spec_for_problem(s, Problem::parse("user:n=5").value());
  ASSERT_TRUE(partial.ok()) << partial.error().message();
  EXPECT_EQ(*make_problem(*partial).attr("n"), "5");
  EXPECT_EQ(*make_problem(*partial).attr("source"), *make_problem(s).attr("source"));
  EXPECT_FALSE(spec_for_problem(s, Problem::parse("user:m=5").value()).ok());
}

TEST_F(SpecTest, StructuralKeyFollowsTheSourceAndTheLaunchNotTheKnobs) {
  auto s = load_ok(join_lines(base_lines()));
  const std::string key = make_problem(s).structural_key();
  // More knob values or another constraint: the same computation, the same key.
  auto wider = load_ok(with_line(4, "  block_size: {values: [32, 64, 128, 256], default: 128}"));
  EXPECT_EQ(make_problem(wider).structural_key(), key);
  // Another launch description: another key.
  auto other_grid = load_ok(with_line(7, "grid: [\"ceil_div(n, block_size * items) + 1\"]"));
  EXPECT_NE(make_problem(other_grid).structural_key(), key);
  // Another source: another key.
  write_bytes(dir_.file("kernel.cu"), std::string(kSource) + "// edited\n");
  auto edited = load_ok(join_lines(base_lines()));
  EXPECT_NE(make_problem(edited).structural_key(), key);
}

TEST_F(SpecTest, IntegerOutputsCompareExactly) {
  auto s = load_ok(with_line(10, "  - {name: c, type: int32, buffer: output, size: n}") +
                   "tolerance: {reduction_length: \"n / 10\"}\n");
  auto g = gate_tolerance(s, 0);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->rtol, 0.0);
  EXPECT_EQ(g->dtype, "int32");
  EXPECT_EQ(g->reduction_length, 100);
  auto f = load_ok(join_lines(base_lines()));
  auto gf = gate_tolerance(f, 0);
  ASSERT_TRUE(gf.ok());
  EXPECT_FALSE(gf->rtol.has_value());  // tolerance_for("fp32") decides
  EXPECT_EQ(gf->dtype, "fp32");
}

TEST_F(SpecTest, InputRangesDefaultPerTypeAndCanBeSet) {
  auto s =
      load_ok(with_line(11, "  - {name: a, type: int32, buffer: input, size: n, range: [0, 999]}"));
  EXPECT_EQ(s.args[1].range, (std::pair<double, double>{0, 999}));
  auto d = load_ok(join_lines(base_lines()));
  EXPECT_EQ(d.args[1].range, (std::pair<double, double>{-1, 1}));
  auto bad =
      load(with_line(10, "  - {name: c, type: float32, buffer: output, size: n, range: [0, 1]}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("range only applies to input and inout"), std::string::npos);
}

TEST_F(SpecTest, ScratchBuffersMayDependOnKnobs) {
  auto lines = base_lines();
  lines.insert(lines.begin() + 12,
               "  - {name: ws, type: float32, buffer: scratch, size: \"n * items\"}");
  auto s = load_ok(join_lines(lines));
  auto space = make_space(s);
  ASSERT_TRUE(space.ok());
  auto inst = instantiate(s, space->parse("block_size=64,items=4").value());
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(inst->args[3].role, ArgRole::kScratch);
  EXPECT_EQ(inst->args[3].elements, 4000);
}

TEST(ElementTypes, SizesAndGateNames) {
  EXPECT_EQ(size_of(ElementType::kBFloat16), 2u);
  EXPECT_EQ(size_of(ElementType::kFloat64), 8u);
  EXPECT_EQ(size_of(ElementType::kUInt8), 1u);
  EXPECT_EQ(gate_dtype(ElementType::kFloat16), "fp16");
  EXPECT_EQ(gate_dtype(ElementType::kBFloat16), "bf16");
  EXPECT_EQ(element_type_from_string("uint32"), ElementType::kUInt32);
  EXPECT_FALSE(element_type_from_string("float").has_value());
  for (auto t : {ElementType::kFloat32, ElementType::kFloat64, ElementType::kFloat16,
                 ElementType::kBFloat16, ElementType::kInt32, ElementType::kInt64,
                 ElementType::kUInt32, ElementType::kInt8, ElementType::kUInt8})
    EXPECT_EQ(element_type_from_string(to_string(t)), t);
}

}  // namespace
}  // namespace attune::user
