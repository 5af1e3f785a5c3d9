// The op registry's contract: every registered op (kernels/ops.h) is known to every consumer of
// its signature, so an op registered in one place but not another fails here (or, for its plan
// and CUDA family, does not link). An op no signature registers is refused by each consumer,
// never taken for another op.
#include "core/op.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "backends/sim/sim_backend.h"
#include "core/config.h"
#include "runtime/shape_key.h"
#ifdef ATTUNE_TEST_PLANS
#include "kernels/plan.h"
#include "runtime/row_plan.h"
#endif

namespace attune {
namespace {

std::vector<std::string> split_x(const std::string& shape) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (std::size_t x; (x = shape.find('x', pos)) != std::string::npos; pos = x + 1)
    out.push_back(shape.substr(pos, x - pos));
  out.push_back(shape.substr(pos));
  return out;
}

// The op's example shape as its signature says it reads: sizes in order, dtype and flags left to
// resolve().
Problem example_spec(const OpSignature& op) {
  const std::vector<std::string> dims = split_x(op.example_shape);
  std::map<std::string, std::string> attrs;
  for (std::size_t i = 0; i < op.sizes.size() && i < dims.size(); ++i) attrs[op.sizes[i]] = dims[i];
  return Problem(op.name, attrs);
}

TEST(Ops, TheRegistryIsWellFormed) {
  ASSERT_FALSE(registered_ops().empty());
  std::set<std::string> names;
  std::set<int> keys;
  for (const OpSignature* op : registered_ops()) {
    SCOPED_TRACE(op->name);
    EXPECT_TRUE(names.insert(op->name).second) << "registered twice";
    EXPECT_EQ(find_op(op->name), op);
    EXPECT_FALSE(op->sizes.empty());
    EXPECT_FALSE(op->dtypes.empty());
    EXPECT_GT(op->max_size, 0);
    EXPECT_EQ(split_x(op->example_shape).size(), op->sizes.size());
    EXPECT_TRUE(Config::parse(op->baseline_config).ok()) << op->baseline_config;
    if (op->runtime_key) {
      EXPECT_TRUE(keys.insert(*op->runtime_key).second)
          << "runtime key " << int(*op->runtime_key) << " taken twice";
      auto kind = runtime::op_kind(op->name);
      ASSERT_TRUE(kind.ok()) << kind.error().message();
      EXPECT_EQ(runtime::signature_of(*kind), op);
    }
  }
}

TEST(Ops, TheShapeSyntaxIsTheSizesInOrder) {
  EXPECT_EQ(find_op("gemm")->shape_syntax(), "MxNxK");
  EXPECT_EQ(find_op("rmsnorm")->shape_syntax(), "ROWSxHIDDEN");
  // The problems and structural keys stored databases hold: the signatures must keep naming them.
  auto g = problem_from_shape("gemm", "16x4096x1024", "bf16");
  ASSERT_TRUE(g.ok()) << g.error().message();
  auto resolved = find_op("gemm")->resolve(*g);
  ASSERT_TRUE(resolved.ok()) << resolved.error().message();
  EXPECT_EQ(resolved->text(), "gemm:bias=0,dtype=bf16,k=1024,m=16,n=4096");
  auto r = find_op("rmsnorm")->resolve(*Problem::parse("rmsnorm:rows=16,hidden=4096,residual=1"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->text(), "rmsnorm:dtype=bf16,hidden=4096,residual=1,rows=16");
}

// The consumer list. A new op must pass each of these before it is done.
TEST(Ops, EveryConsumerKnowsEveryRegisteredOp) {
  SimBackend sim;
  std::set<std::string> offered;
  for (const auto& p : sim.problems()) offered.insert(p.problem.op());
  for (const OpSignature* op : registered_ops()) {
    SCOPED_TRACE(op->name);
    // The CLI: --op NAME --shape EXAMPLE is the problem the signature says.
    auto cli = problem_from_shape(op->name, op->example_shape, "");
    ASSERT_TRUE(cli.ok()) << cli.error().message();
    EXPECT_EQ(cli->text(), example_spec(*op).text());
    auto resolved = op->resolve(*cli);
    ASSERT_TRUE(resolved.ok()) << resolved.error().message();
    EXPECT_EQ(*resolved->attr("dtype"), op->dtypes.front());
    for (const auto& f : op->flags) EXPECT_EQ(*resolved->attr(f), "0");

    // libattune-rt's key: a problem of the op round-trips through it, in every dtype it runs, flag
    // set or not.
    if (op->runtime_key) {
      for (const std::string& dtype : op->dtypes) {
        for (const char* flag : {"0", "1"}) {
          auto attrs = resolved->attrs();
          attrs["dtype"] = dtype;
          if (!op->flags.empty()) attrs[op->flags.front()] = flag;
          // The optional flags too (written only when set, as resolve() writes them), alone.
          if (std::string(flag) == "1" && !op->optional_flags.empty()) {
            if (!op->flags.empty()) attrs[op->flags.front()] = "0";
            attrs[op->optional_flags.back()] = "1";
          }
          const Problem p(op->name, attrs);
          auto key = runtime::shape_key_of(p);
          ASSERT_TRUE(key.ok()) << key.error().message();
          auto back = runtime::problem_of(*key);
          ASSERT_TRUE(back.ok()) << back.error().message();
          EXPECT_EQ(back->text(), p.text());
        }
      }
    } else {
      EXPECT_FALSE(runtime::op_kind(op->name).ok());
    }

    // The sim offers the op with the signature's sizes, or says it does not simulate it.
    const auto& unsimulated = SimBackend::unsimulated_ops();
    const bool declined =
        std::find(unsimulated.begin(), unsimulated.end(), op->name) != unsimulated.end();
    EXPECT_NE(offered.count(op->name) == 1, declined)
        << "the sim must offer it or name it in unsimulated_ops()";
    auto in_sim = sim.resolve(cli->text());
    if (declined) {
      ASSERT_FALSE(in_sim.ok());
      EXPECT_NE(in_sim.error().message().find("does not simulate op '" + op->name + "'"),
                std::string::npos);
    } else {
      ASSERT_TRUE(in_sim.ok()) << in_sim.error().message();
      for (const auto& s : op->sizes) EXPECT_EQ(*in_sim->attr(s), *cli->attr(s));
    }

#ifdef ATTUNE_TEST_PLANS
    // The kernel plans plan the signature's baseline, and libattune-rt's open-time check accepts
    // it.
    const Config baseline = *Config::parse(op->baseline_config);
    auto plan = kernels::plan(*resolved, baseline);
    EXPECT_TRUE(plan.ok()) << plan.error().message();
    if (op->runtime_key) {
      Status st = runtime::check_row_plan(*resolved, baseline);
      EXPECT_TRUE(st.ok()) << st.error().message();
    }
#endif
  }
}

// libattune-rt's entry points build keys from flag bits (gemm's bias, gemm_silu_mul's silu_mul):
// each is the bit a problem's key sets, so a call finds the rows the tuner wrote for it.
TEST(Ops, AFlagsBitIsTheOneItsProblemsKeySets) {
  for (const OpSignature* op : registered_ops()) {
    if (!op->runtime_key) continue;
    std::vector<std::string> flags = op->flags;
    flags.insert(flags.end(), op->optional_flags.begin(), op->optional_flags.end());
    for (const std::string& flag : flags) {
      auto bit = runtime::flag_bit(op->name, flag);
      ASSERT_TRUE(bit.ok()) << bit.error().message();
      std::map<std::string, std::string> attrs;
      for (const std::string& size : op->sizes) attrs[size] = "2";
      attrs["dtype"] = "bf16";
      attrs[flag] = "1";
      auto key = runtime::shape_key_of(Problem(op->name, attrs));
      ASSERT_TRUE(key.ok()) << op->name << " " << flag << ": " << key.error().message();
      EXPECT_EQ(key->flags, *bit) << op->name << " " << flag;
    }
  }
  EXPECT_EQ(*runtime::flag_bit("gemm", "silu_mul"), 0b10);
  auto none = runtime::flag_bit("gemm", "relu");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message(), "op 'gemm' has no flag 'relu'");
  EXPECT_FALSE(runtime::flag_bit("conv", "bias").ok());
}

TEST(Ops, AnUnknownOpIsRefusedNotTakenForAnother) {
  EXPECT_EQ(find_op("conv"), nullptr);
  auto shape = problem_from_shape("conv", "4x4", "");
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(
      shape.error().message(),
      "--shape is understood for --op gemm (MxNxK), rmsnorm (ROWSxHIDDEN), attention_decode "
      "(BATCHxKVxHEADxQ_HEADSxKV_HEADSxQ_LEN), attention_prefill "
      "(SEQxBATCHxHEADxQ_HEADSxKV_HEADS), rope (BATCHxSEQxKVxQ_HEADSxKV_HEADSxHEADxTHETA), "
      "silu_mul (ROWSxINTER) and gemm_rope (BATCHxSEQxKVxQ_HEADSxKV_HEADSxHEADxTHETAxHIDDEN), not "
      "'conv'");

  auto kind = runtime::op_kind("conv");
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.error().message().find("no entry point for op 'conv'"), std::string::npos);
  auto key = runtime::shape_key_of(*Problem::parse("conv:rows=4,hidden=4,dtype=bf16"));
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message().find("'conv'"), std::string::npos);
  // A key whose op tag no signature has is no op's key (before the registry, any tag but gemm's
  // was taken for rmsnorm).
  runtime::ShapeKey stray;
  stray.op = static_cast<runtime::OpKind>(200);
  stray.sizes[0] = stray.sizes[1] = 16;
  EXPECT_EQ(runtime::signature_of(stray.op), nullptr);
  auto problem = runtime::problem_of(stray);
  ASSERT_FALSE(problem.ok());
  EXPECT_NE(problem.error().message().find("200"), std::string::npos);

  SimBackend sim;
  auto in_sim = sim.resolve("conv:n=4");
  ASSERT_FALSE(in_sim.ok());
  EXPECT_NE(in_sim.error().message().find("no problem 'conv'"), std::string::npos);
#ifdef ATTUNE_TEST_PLANS
  const Problem conv("conv", {{"rows", "4"}, {"hidden", "4"}, {"dtype", "bf16"}});
  EXPECT_FALSE(
      kernels::plan(conv, *Config::parse("threads=256,rows_per_block=1,vec=1,unroll=1")).ok());
  Status st = runtime::check_row_plan(conv, *Config::parse("threads=256"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("no entry point for op 'conv'"), std::string::npos);
#endif
}

TEST(Ops, ResolveCompletesAndChecksASpecBySignature) {
  const OpSignature& gemm = *find_op("gemm");
  auto bad = [&](const std::string& spec) {
    auto r = gemm.resolve(*Problem::parse(spec));
    return r.ok() ? std::string() : r.error().message();
  };
  EXPECT_EQ(
      bad("gemm:m=1,n=2,k=3,q=1"),
      "gemm has no attribute 'q' (it has m, n, k, dtype, bias, silu_mul, rms_norm, residual)");
  EXPECT_EQ(bad("gemm:m=1,n=2"), "gemm needs k=N (a positive integer)");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=0"), "gemm k=0 is out of range");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=2000000"), "gemm k=2000000 is out of range");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,dtype=fp8"), "gemm dtype 'fp8' is not supported (bf16, fp16)");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,bias=2"), "gemm bias must be 0 or 1");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,dtype=fp16,bias=1"), "");
  // An optional flag (added after the op's first release) is written only when set, so a key
  // stored before it existed is the key of the same problem now.
  EXPECT_EQ(gemm.resolve(*Problem::parse("gemm:m=1,n=2,k=3"))->text(),
            "gemm:bias=0,dtype=bf16,k=3,m=1,n=2");
  EXPECT_EQ(gemm.resolve(*Problem::parse("gemm:m=1,n=2,k=3,silu_mul=0"))->text(),
            "gemm:bias=0,dtype=bf16,k=3,m=1,n=2");
  EXPECT_EQ(gemm.resolve(*Problem::parse("gemm:m=1,n=2,k=3,silu_mul=1"))->text(),
            "gemm:bias=0,dtype=bf16,k=3,m=1,n=2,silu_mul=1");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,silu_mul=2"), "gemm silu_mul must be 0 or 1");
  EXPECT_EQ(bad("gemm:m=1,n=3,k=3,silu_mul=1"),
            "gemm:bias=0,dtype=bf16,k=3,m=1,n=3,silu_mul=1: silu_mul=1 needs an even n (the "
            "gate's rows, then the up's)");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,bias=1,silu_mul=1"),
            "gemm:bias=1,dtype=bf16,k=3,m=1,n=2,silu_mul=1: silu_mul=1 takes no bias");
  // The folded RMSNorm scales the product's rows (a bias would be scaled too); a residual adds to
  // a projection's output, not to SiLU * mul's.
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,bias=1,rms_norm=1"),
            "gemm:bias=1,dtype=bf16,k=3,m=1,n=2,rms_norm=1: rms_norm=1 takes no bias (the row "
            "scale would scale it)");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,residual=1,silu_mul=1"),
            "gemm:bias=0,dtype=bf16,k=3,m=1,n=2,residual=1,silu_mul=1: residual=1 adds to a "
            "projection's output, not to SiLU * mul's");
  EXPECT_EQ(bad("gemm:m=1,n=2,k=3,rms_norm=1,residual=1,silu_mul=0"), "");
}

// attention_decode's sizes together: what its kernels are written for, refused in one line by
// resolve() (hence by the CLI, the sim and the CUDA family alike).
TEST(Ops, AttentionDecodeRefusesSizesItsKernelsAreNotWrittenFor) {
  const OpSignature& op = *find_op("attention_decode");
  EXPECT_EQ(op.shape_syntax(), "BATCHxKVxHEADxQ_HEADSxKV_HEADSxQ_LEN");
  auto bad = [&](const std::string& shape) {
    auto spec = op.problem_from_shape(shape, "");
    if (!spec) return spec.error().message();
    auto r = op.resolve(*spec);
    return r.ok() ? std::string() : r.error().message();
  };
  EXPECT_EQ(bad("8x4096x128x32x8x1"), "");
  EXPECT_EQ(bad("1x1x64x1x1x1"), "");
  EXPECT_EQ(bad("3x7x256x16x2x7"), "");
  EXPECT_EQ(bad("1x32768x128x64x8x8"), "");
  EXPECT_EQ(bad("8x4096x96x32x8x1"), "attention_decode head=96 is not supported (64, 128, 256)");
  EXPECT_EQ(bad("8x4096x128x12x8x1"),
            "attention_decode q_heads=12 is not a multiple of kv_heads=8 (grouped-query attention "
            "shares each KV head among q_heads / kv_heads query heads)");
  EXPECT_EQ(bad("8x4096x128x32x8x9"),
            "attention_decode q_len=9 is more than 8 (decode steps of 1-8 tokens)");
  EXPECT_EQ(bad("8x4x128x32x8x5"),
            "attention_decode q_len=5 is more than kv=4 (the cache holds the new tokens too)");
  EXPECT_EQ(bad("8x4096x128x32x8"),
            "--shape '8x4096x128x32x8' is not 6 positive integers joined by 'x' "
            "(BATCHxKVxHEADxQ_HEADSxKV_HEADSxQ_LEN)");
  auto p = op.resolve(*Problem::parse(
      "attention_decode:batch=2,kv=100,head=64,q_heads=4,kv_heads=4,q_len=1,dtype=fp16"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->text(),
            "attention_decode:batch=2,dtype=fp16,head=64,kv=100,kv_heads=4,q_heads=4,q_len=1");
  EXPECT_EQ(op.sweep_defaults.at("q_heads"), "32");
  EXPECT_EQ(op.sweep_default_per, std::vector<std::string>{"head"});
  // libattune-rt dispatches it (attune_rt_attention_decode): its six sizes fit the key, and a
  // problem round-trips through it.
  ASSERT_TRUE(op.runtime_key.has_value());
  auto key = runtime::shape_key_of(*p);
  ASSERT_TRUE(key.ok()) << key.error().message();
  EXPECT_EQ(key->sizes, (std::array<std::int64_t, runtime::kKeySizes>{2, 100, 64, 4, 4, 1}));
  EXPECT_EQ(runtime::problem_of(*key)->text(), p->text());
}

TEST(Ops, TheShapeMustHaveOneSizePerAttribute) {
  for (const char* shape : {"4x4", "4x4x4x4", "4xx4", "0x4x4", "4x4x", "axbxc"}) {
    auto p = problem_from_shape("gemm", shape, "");
    ASSERT_FALSE(p.ok()) << shape;
    EXPECT_EQ(p.error().message(), std::string("--shape '") + shape +
                                       "' is not 3 positive integers joined by 'x' (MxNxK)");
  }
}

}  // namespace
}  // namespace attune
