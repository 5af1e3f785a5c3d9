// The assembled layer as a problem (core/layer_problem.h): a lowered grouping's kernels and
// their configs written as one problem and read back, through the text the store and the
// worker carry; malformed layer problems refused in one line.
#include "core/layer_problem.h"

#include <gtest/gtest.h>

#include "graph/layer.h"

namespace attune {
namespace {

std::vector<LayerStep> qwen_layer_steps() {
  graph::ModelConfig m;
  m.name = "test";
  m.hidden_size = 1024;
  m.intermediate_size = 3072;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.num_hidden_layers = 2;
  m.rope_theta = 1000000;
  m.qk_norm = true;
  m.dtype = "bf16";
  const graph::LayerGraph g = graph::build_layer(m, 1, graph::LayerShape{false, 8, 512, 0});
  const graph::Lowering l = graph::lower(g, {{"residual", "fused"},
                                             {"rope", "kernel"},
                                             {"silu_mul", "kernel"},
                                             {"attention", "flash"},
                                             {"norm", "kernel"}});
  EXPECT_TRUE(l.available()) << l.unavailable;
  std::vector<LayerStep> steps;
  int i = 0;
  for (const graph::Kernel& k : l.kernels)
    steps.push_back({k.nodes.front(), k.problem,
                     *Config::parse("block=" + std::to_string(++i) + ",kernel=split,vec=4")});
  return steps;
}

TEST(LayerProblem, RoundTripsThroughItsText) {
  const std::vector<LayerStep> steps = qwen_layer_steps();
  ASSERT_EQ(steps.size(), 9u);
  auto p = layer_problem(steps);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->op(), kLayerOp);
  auto parsed = Problem::parse(p->text());
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->text(), p->text());
  auto back = layer_steps(*parsed);
  ASSERT_TRUE(back) << back.error().message();
  ASSERT_EQ(back->size(), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ((*back)[i].role, steps[i].role);
    EXPECT_EQ((*back)[i].problem.text(), steps[i].problem.text());
    EXPECT_EQ((*back)[i].config.text(), steps[i].config.text());
  }
  EXPECT_EQ(steps.front().role, "input_residual");
  EXPECT_EQ(steps.back().role, "down_proj");
  // Another config of one kernel is another problem: the store keeps both layers apart.
  std::vector<LayerStep> other = steps;
  other[3].config = *Config::parse("block=99");
  EXPECT_NE(layer_problem(other)->structural_key(), p->structural_key());
}

TEST(LayerProblem, AConfigWithNoKnobsRoundTrips) {
  std::vector<LayerStep> steps = {{"silu_mul", *Problem::parse("silu_mul:rows=8,inter=64"), {}}};
  auto p = layer_problem(steps);
  ASSERT_TRUE(p);
  auto back = layer_steps(*Problem::parse(p->text()));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(back->front().config.text().empty());
}

TEST(LayerProblem, MalformedOnesAreRefused) {
  EXPECT_FALSE(layer_problem({}));
  EXPECT_FALSE(layer_steps(*Problem::parse("gemm:m=1,n=2,k=3")));
  EXPECT_FALSE(layer_steps(*Problem::parse("layer:s00.role=x")));  // no problem, no config
  auto extra = Problem::parse(
      "layer:s00.role=silu_mul,s00.problem=silu_mul:rows=8;inter=64,s00.config=-,other=1");
  ASSERT_TRUE(extra);
  auto r = layer_steps(*extra);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("attributes other than"), std::string::npos);
  auto bad_config =
      Problem::parse("layer:s00.role=silu_mul,s00.problem=silu_mul:rows=8;inter=64,s00.config=vec");
  ASSERT_TRUE(bad_config);
  EXPECT_FALSE(layer_steps(*bad_config));
  auto semicolon = layer_problem({{"x;y", *Problem::parse("silu_mul:rows=8,inter=64"), {}}});
  EXPECT_FALSE(semicolon);
}

TEST(LayerProblem, ItsSpaceIsOneConfig) {
  auto s = layer_space();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count(), 1u);
  EXPECT_EQ(s->config(s->baseline()).text(), "run=graph");
}

}  // namespace
}  // namespace attune
