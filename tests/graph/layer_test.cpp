// The decoder layer's graph, its forks and their lowering to problems of registered ops: sizes
// from the model's published fields, a grouping whose op is not registered reported unavailable
// (never lowered to a stand-in), structural keys that hash what is computed.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "graph/layer.h"
#include "kernels/ops.h"

namespace attune::graph {
namespace {

ModelConfig qwen_embedding() {
  auto m = load_model(std::string(ATTUNE_SOURCE_DIR) + "/models/qwen3-embedding-0.6b.json");
  EXPECT_TRUE(m);
  return *m;
}
ModelConfig llama() {
  auto m = load_model(std::string(ATTUNE_SOURCE_DIR) + "/models/llama-3.1-8b.json");
  EXPECT_TRUE(m);
  return *m;
}

LayerShape prefill(std::int64_t batch, std::int64_t tokens) {
  return {false, batch, tokens, 0};
}
LayerShape decode(std::int64_t batch, std::int64_t kv) {
  return {true, batch, 0, kv};
}

// Stand-ins for the RoPE and SiLU*mul families' signatures, so lowering is tested whether or not
// those ops are registered in this build; everything else is the registered ops'.
const OpSignature& fake_rope() {
  static const OpSignature op{
      .name = "rope",
      .sizes = {"batch", "seq", "kv", "q_heads", "kv_heads", "head", "theta"},
      .flags = {"qk_norm", "llama3_scaling"},
      .dtypes = {"bf16", "fp16"},
      .max_size = 1 << 20};
  return op;
}
const OpSignature& fake_silu_mul() {
  static const OpSignature op{
      .name = "silu_mul", .sizes = {"rows", "inter"}, .dtypes = {"bf16"}, .max_size = 1 << 24};
  return op;
}
const OpSignature* with_new_families(std::string_view name) {
  if (name == "rope") return &fake_rope();
  if (name == "silu_mul") return &fake_silu_mul();
  return find_op(name);
}
const OpSignature* without_new_families(std::string_view name) {
  if (name == "rope" || name == "silu_mul" || name == "gemm_rope") return nullptr;
  return find_op(name);
}

const Node& node(const LayerGraph& g, const std::string& name) {
  auto it =
      std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; });
  EXPECT_NE(it, g.nodes.end()) << name;
  return *it;
}

TEST(LayerGraph, GemmSizesFollowTheModelsPublishedFields) {
  const LayerGraph g = build_layer(qwen_embedding(), 0, prefill(8, 512));
  auto mnk = [&](const std::string& n) {
    const Node& x = node(g, n);
    return std::vector<std::int64_t>{x.sizes.at("m"), x.sizes.at("n"), x.sizes.at("k")};
  };
  // models/README.md: fused QKV 4096x1024, o 1024x2048, fused gate/up 6144x1024, down 1024x3072.
  EXPECT_EQ(mnk("qkv_proj"), (std::vector<std::int64_t>{4096, 4096, 1024}));
  EXPECT_EQ(mnk("o_proj"), (std::vector<std::int64_t>{4096, 1024, 2048}));
  EXPECT_EQ(mnk("gate_up_proj"), (std::vector<std::int64_t>{4096, 6144, 1024}));
  EXPECT_EQ(mnk("down_proj"), (std::vector<std::int64_t>{4096, 1024, 3072}));
  EXPECT_EQ(node(g, "q_norm").sizes.at("rows"), 4096 * 16);
  EXPECT_EQ(node(g, "q_norm").sizes.at("hidden"), 128);
  EXPECT_EQ(node(g, "k_norm").sizes.at("rows"), 4096 * 8);
  // Layer 0 has no residual to add before its first norm; every later layer does.
  EXPECT_EQ(std::count_if(g.nodes.begin(), g.nodes.end(),
                          [](const Node& n) { return n.name == "input_residual"; }),
            0);
  const LayerGraph g1 = build_layer(qwen_embedding(), 1, prefill(8, 512));
  EXPECT_EQ(g1.nodes.front().name, "input_residual");
  // No q/k norm in Llama.
  const LayerGraph l = build_layer(llama(), 0, decode(8, 2048));
  EXPECT_EQ(std::count_if(l.nodes.begin(), l.nodes.end(),
                          [](const Node& n) { return n.name == "q_norm"; }),
            0);
  EXPECT_EQ(node(l, "qkv_proj").sizes.at("m"), 8);
  EXPECT_EQ(node(l, "gate_up_proj").sizes.at("n"), 2 * 14336);
}

TEST(LayerGraph, ShapesAreCheckedInOneLine) {
  EXPECT_TRUE(prefill(8, 512).check().ok());
  EXPECT_TRUE(decode(8, 2048).check().ok());
  EXPECT_FALSE(prefill(0, 512).check().ok());
  EXPECT_FALSE(prefill(8, 0).check().ok());
  EXPECT_FALSE(decode(8, 0).check().ok());
  EXPECT_FALSE((LayerShape{true, 8, 512, 2048}).check().ok());
  EXPECT_EQ(prefill(8, 512).text(), "prefill batch=8 tokens=512");
  EXPECT_EQ(decode(8, 2048).text(), "decode batch=8 kv=2048");
}

TEST(LayerForks, GroupingsAreTheProductOfTheForks) {
  const auto forks = layer_forks(qwen_embedding());
  ASSERT_EQ(forks.size(), 5u);
  const auto all = all_groupings(forks);
  EXPECT_EQ(all.size(), 2u * 3u * 2u * 2u * 2u);
  std::set<std::string> texts;
  for (const auto& g : all) texts.insert(grouping_text(g));
  EXPECT_EQ(texts.size(), all.size());
  // Without a q/k norm, RoPE has no norm to leave out.
  EXPECT_EQ(all_groupings(layer_forks(llama())).size(), 2u * 2u * 2u * 2u * 2u);
}

Grouping grouping(std::string residual, std::string rope, std::string silu, std::string attn,
                  std::string norm = "kernel") {
  return {{"residual", residual},
          {"rope", rope},
          {"silu_mul", silu},
          {"attention", attn},
          {"norm", norm}};
}

std::vector<std::string> texts(const Lowering& l) {
  std::vector<std::string> out;
  for (const Kernel& k : l.kernels)
    out.push_back(k.problem.text() + (k.form.any() ? "" : " " + k.form.text()));
  return out;
}

TEST(Lowering, TheFusedLayerLowersToProblemsOfRegisteredOps) {
  const LayerGraph g = build_layer(qwen_embedding(), 1, prefill(8, 512));
  const Lowering l = lower(g, grouping("fused", "kernel", "kernel", "flash"), with_new_families);
  ASSERT_TRUE(l.available()) << l.unavailable;
  EXPECT_EQ(
      texts(l),
      (std::vector<std::string>{
          "rmsnorm:dtype=bf16,hidden=1024,residual=1,rows=4096",
          "gemm:bias=0,dtype=bf16,k=1024,m=4096,n=4096",
          "rope:batch=8,dtype=bf16,head=128,kv=512,kv_heads=8,llama3_scaling=0,q_heads=16,qk_norm="
          "1,"
          "seq=512,theta=1000000",
          "attention_prefill:batch=8,dtype=bf16,head=128,kv_heads=8,q_heads=16,seq=512 "
          "kernel!=split",
          "gemm:bias=0,dtype=bf16,k=2048,m=4096,n=1024",
          "rmsnorm:dtype=bf16,hidden=1024,residual=1,rows=4096",
          "gemm:bias=0,dtype=bf16,k=1024,m=4096,n=6144", "silu_mul:dtype=bf16,inter=3072,rows=4096",
          "gemm:bias=0,dtype=bf16,k=3072,m=4096,n=1024"}));
  // Each of the graph's nodes is computed by exactly one kernel.
  std::multiset<std::string> covered;
  for (const Kernel& k : l.kernels) covered.insert(k.nodes.begin(), k.nodes.end());
  for (const Node& n : g.nodes) EXPECT_EQ(covered.count(n.name), 1u) << n.name;
  EXPECT_EQ(covered.size(), g.nodes.size());

  // The q/k norms as their own RMSNorm kernels, and the split attention chain.
  const Lowering s = lower(g, grouping("fused", "separate", "kernel", "split"), with_new_families);
  ASSERT_TRUE(s.available()) << s.unavailable;
  const auto st = texts(s);
  EXPECT_EQ(st.size(), 11u);
  EXPECT_EQ(st[2], "rmsnorm:dtype=bf16,hidden=128,residual=0,rows=65536");
  EXPECT_EQ(st[3], "rmsnorm:dtype=bf16,hidden=128,residual=0,rows=32768");
  EXPECT_EQ(
      st[4],
      "rope:batch=8,dtype=bf16,head=128,kv=512,kv_heads=8,llama3_scaling=0,q_heads=16,qk_norm=0,"
      "seq=512,theta=1000000");
  EXPECT_EQ(st[5],
            "attention_prefill:batch=8,dtype=bf16,head=128,kv_heads=8,q_heads=16,seq=512 "
            "kernel=split");

  // One decode step: attention_decode against the cache, the GEMMs at m = batch.
  const Lowering d = lower(build_layer(llama(), 0, decode(8, 2048)),
                           grouping("fused", "kernel", "kernel", "flash"), with_new_families);
  ASSERT_TRUE(d.available()) << d.unavailable;
  EXPECT_EQ(texts(d)[0], "rmsnorm:dtype=bf16,hidden=4096,residual=0,rows=8");
  EXPECT_EQ(
      texts(d)[2],
      "rope:batch=8,dtype=bf16,head=128,kv=2048,kv_heads=8,llama3_scaling=1,q_heads=32,qk_norm=0,"
      "seq=1,theta=500000");
  EXPECT_EQ(texts(d)[3],
            "attention_decode:batch=8,dtype=bf16,head=128,kv=2048,kv_heads=8,q_heads=32,q_len=1 "
            "kernel!=split");
}

TEST(Lowering, AFormNoRegisteredOpImplementsIsUnavailableNotFaked) {
  const LayerGraph g = build_layer(qwen_embedding(), 1, prefill(1, 128));
  const Lowering add =
      lower(g, grouping("separate", "kernel", "kernel", "flash"), with_new_families);
  EXPECT_FALSE(add.available());
  EXPECT_TRUE(add.kernels.empty());
  EXPECT_NE(add.unavailable.find("no registered op 'add'"), std::string::npos) << add.unavailable;
  const Lowering epilogue =
      lower(g, grouping("fused", "epilogue", "kernel", "flash"), with_new_families);
  // SiLU * mul in the gate/up GEMM's epilogue: gemm's silu_mul flag, and no silu_mul kernel.
  const Lowering silu =
      lower(g, grouping("fused", "kernel", "epilogue", "flash"), with_new_families);
  ASSERT_TRUE(silu.available()) << silu.unavailable;
  const auto st = texts(silu);
  ASSERT_EQ(st.size(), 8u);
  EXPECT_EQ(st[6], "gemm:bias=0,dtype=bf16,k=1024,m=128,n=6144,silu_mul=1");
  EXPECT_EQ(silu.kernels[6].nodes, (std::vector<std::string>{"gate_up_proj", "silu_mul"}));
  EXPECT_EQ(st[7], "gemm:bias=0,dtype=bf16,k=3072,m=128,n=1024");
  // RoPE with the q/k norm in the QKV GEMM's epilogue: one gemm_rope kernel for the projection,
  // both norms and the rotation, sized from both (rope's sizes and the hidden size), and no
  // separate QKV GEMM or RoPE kernel.
  ASSERT_TRUE(epilogue.available()) << epilogue.unavailable;
  const auto et = texts(epilogue);
  ASSERT_EQ(et.size(), 8u);
  EXPECT_EQ(et[1],
            "gemm_rope:batch=1,dtype=bf16,head=128,hidden=1024,kv=128,kv_heads=8,q_heads=16,"
            "qk_norm=1,seq=128,theta=1000000");
  EXPECT_EQ(epilogue.kernels[1].nodes,
            (std::vector<std::string>{"qkv_proj", "q_norm", "k_norm", "rope"}));
  EXPECT_EQ(et[2].rfind("attention_prefill:", 0), 0u) << et[2];
  // Without gemm_rope the epilogue grouping is unavailable, and says which op it lacks.
  const Lowering no_fused_op = lower(g, grouping("fused", "epilogue", "kernel", "flash"),
                                     [](std::string_view name) -> const OpSignature* {
                                       return name == "gemm_rope" ? nullptr : find_op(name);
                                     });
  EXPECT_FALSE(no_fused_op.available());
  EXPECT_NE(no_fused_op.unavailable.find("no registered op 'gemm_rope'"), std::string::npos)
      << no_fused_op.unavailable;
  // Without the RoPE family no grouping of a layer lowers, and each says which op is missing.
  for (const Grouping& gr : all_groupings(layer_forks(g.model))) {
    const Lowering l = lower(g, gr, without_new_families);
    EXPECT_FALSE(l.available()) << grouping_text(gr);
    EXPECT_TRUE(l.unavailable.find("'rope'") != std::string::npos ||
                l.unavailable.find("'gemm_rope'") != std::string::npos ||
                l.unavailable.find("'add'") != std::string::npos)
        << l.unavailable;
  }
  // Llama 3.1's RoPE scaling is part of what its RoPE computes: a rope op without the flag
  // cannot stand in for it.
  static const OpSignature plain_rope{
      .name = "rope",
      .sizes = {"batch", "seq", "kv", "q_heads", "kv_heads", "head", "theta"},
      .flags = {"qk_norm"},
      .dtypes = {"bf16"},
      .max_size = 1 << 24};
  const Lowering unscaled =
      lower(build_layer(llama(), 0, decode(1, 64)), grouping("fused", "kernel", "kernel", "flash"),
            [](std::string_view name) -> const OpSignature* {
              if (name == "rope") return &plain_rope;
              return with_new_families(name);
            });
  EXPECT_FALSE(unscaled.available());
  EXPECT_NE(unscaled.unavailable.find("op 'rope' has no flag 'llama3_scaling'"), std::string::npos)
      << unscaled.unavailable;
  // An unknown option is refused, not lowered.
  EXPECT_FALSE(
      lower(g, grouping("fused", "kernel", "kernel", "fast"), with_new_families).available());
}

// norm=gemm: no RMSNorm kernel. The QKV and gate/up GEMMs take the norms (rms_norm=1), o_proj
// the attention residual (residual=1), and down_proj the MLP's residual: layer 0's as every
// layer's (it opens the next layer), a later layer listing its own input_residual there, so
// layers 0 and 1 lower to the same kernels. RoPE in the QKV epilogue takes the input norm as
// gemm_rope's rms_norm flag, and without a residual add kernel the separate residual is
// unavailable.
TEST(Lowering, NormsFoldIntoTheirGemms) {
  const LayerGraph g0 = build_layer(qwen_embedding(), 0, prefill(1, 128));
  const LayerGraph g1 = build_layer(qwen_embedding(), 1, prefill(1, 128));
  const Lowering l0 =
      lower(g0, grouping("fused", "kernel", "epilogue", "flash", "gemm"), with_new_families);
  const Lowering l1 =
      lower(g1, grouping("fused", "kernel", "epilogue", "flash", "gemm"), with_new_families);
  ASSERT_TRUE(l0.available()) << l0.unavailable;
  ASSERT_TRUE(l1.available()) << l1.unavailable;
  EXPECT_EQ(texts(l0),
            (std::vector<std::string>{
                "gemm:bias=0,dtype=bf16,k=1024,m=128,n=4096,rms_norm=1",
                "rope:batch=1,dtype=bf16,head=128,kv=128,kv_heads=8,llama3_scaling=0,q_heads=16,"
                "qk_norm=1,seq=128,theta=1000000",
                "attention_prefill:batch=1,dtype=bf16,head=128,kv_heads=8,q_heads=16,seq=128 "
                "kernel!=split",
                "gemm:bias=0,dtype=bf16,k=2048,m=128,n=1024,residual=1",
                "gemm:bias=0,dtype=bf16,k=1024,m=128,n=6144,rms_norm=1,silu_mul=1",
                "gemm:bias=0,dtype=bf16,k=3072,m=128,n=1024,residual=1"}));
  EXPECT_EQ(texts(l1), texts(l0));
  EXPECT_EQ(l0.kernels[0].nodes, (std::vector<std::string>{"qkv_proj", "input_norm"}));
  EXPECT_EQ(l0.kernels[3].nodes, (std::vector<std::string>{"o_proj", "attention_residual"}));
  EXPECT_EQ(l0.kernels[4].nodes,
            (std::vector<std::string>{"gate_up_proj", "post_attention_norm", "silu_mul"}));
  EXPECT_EQ(l1.kernels[5].nodes, (std::vector<std::string>{"down_proj", "input_residual"}));
  // Each node of either layer is computed by exactly one kernel.
  for (const auto* pair : {&g0, &g1}) {
    const Lowering& l = pair == &g0 ? l0 : l1;
    std::multiset<std::string> covered;
    for (const Kernel& k : l.kernels) covered.insert(k.nodes.begin(), k.nodes.end());
    for (const Node& n : pair->nodes) EXPECT_EQ(covered.count(n.name), 1u) << n.name;
    EXPECT_EQ(covered.size(), pair->nodes.size());
  }
  // SiLU * mul as its own kernel: the gate/up GEMM still folds the norm.
  const Lowering k =
      lower(g0, grouping("fused", "kernel", "kernel", "flash", "gemm"), with_new_families);
  ASSERT_TRUE(k.available()) << k.unavailable;
  EXPECT_EQ(texts(k)[4], "gemm:bias=0,dtype=bf16,k=1024,m=128,n=6144,rms_norm=1");
  EXPECT_EQ(k.kernels[5].problem.op(), "silu_mul");
  // RoPE in the QKV epilogue folds the input norm too: one gemm_rope with rms_norm=1 over
  // qkv_proj, the q/k norms, rope and input_norm (six kernels with SiLU * mul its own).
  const Lowering rope =
      lower(g0, grouping("fused", "epilogue", "kernel", "flash", "gemm"), with_new_families);
  ASSERT_TRUE(rope.available()) << rope.unavailable;
  ASSERT_EQ(rope.kernels.size(), 6u);
  EXPECT_EQ(rope.kernels[0].problem.op(), "gemm_rope");
  EXPECT_EQ(*rope.kernels[0].problem.attr("rms_norm"), "1");
  EXPECT_EQ(*rope.kernels[0].problem.attr("qk_norm"), "1");
  EXPECT_EQ(rope.kernels[0].nodes,
            (std::vector<std::string>{"qkv_proj", "q_norm", "k_norm", "rope", "input_norm"}));
  // A gemm_rope without the flag cannot take the norm: that grouping is unavailable, and says so.
  static const OpSignature plain_gemm_rope{
      .name = "gemm_rope",
      .sizes = {"batch", "seq", "kv", "q_heads", "kv_heads", "head", "theta", "hidden"},
      .flags = {"qk_norm"},
      .dtypes = {"bf16"},
      .max_size = 1 << 24};
  const Lowering unfolded = lower(g0, grouping("fused", "epilogue", "kernel", "flash", "gemm"),
                                  [](std::string_view name) -> const OpSignature* {
                                    if (name == "gemm_rope") return &plain_gemm_rope;
                                    return with_new_families(name);
                                  });
  EXPECT_FALSE(unfolded.available());
  EXPECT_NE(unfolded.unavailable.find("op 'gemm_rope' has no flag 'rms_norm'"), std::string::npos)
      << unfolded.unavailable;
  EXPECT_FALSE(
      lower(g1, grouping("separate", "kernel", "kernel", "flash", "gemm"), with_new_families)
          .available());
}

// The registered families slot in by name: with RoPE and SiLU*mul registered, a Qwen3 layer
// lowers through them with nothing of theirs named here but the op and flag names.
TEST(Lowering, TheRegisteredFamiliesSlotIn) {
  if (!find_op("rope") || !find_op("silu_mul")) GTEST_SKIP() << "rope or silu_mul not registered";
  const Lowering q = lower(build_layer(qwen_embedding(), 1, prefill(8, 512)),
                           grouping("fused", "kernel", "kernel", "flash"));
  ASSERT_TRUE(q.available()) << q.unavailable;
  EXPECT_EQ(q.kernels[2].problem.op(), "rope");
  EXPECT_EQ(*q.kernels[2].problem.attr("qk_norm"), "1");
  EXPECT_EQ(*q.kernels[2].problem.attr("theta"), "1000000");
  EXPECT_EQ(q.kernels[7].problem.op(), "silu_mul");
  EXPECT_EQ(q.kernels[2].problem.attr("llama3_scaling"), nullptr);  // optional: absent when 0
  // Llama 3.1 lowers through the registered rope with its llama3_scaling flag set.
  const Lowering l = lower(build_layer(llama(), 1, decode(8, 2048)),
                           grouping("fused", "kernel", "kernel", "flash"));
  ASSERT_TRUE(l.available()) << l.unavailable;
  EXPECT_EQ(l.kernels[2].problem.op(), "rope");
  EXPECT_EQ(*l.kernels[2].problem.attr("llama3_scaling"), "1");
  EXPECT_EQ(*l.kernels[2].problem.attr("qk_norm"), "0");
  // rope_scaling with other values (Llama 3.2's factor 32) is another function than the flag's:
  // unavailable, with the values named, rather than lowered to Llama 3.1's rewrite.
  ModelConfig llama32 = llama();
  llama32.rope_scaling->factor = 32;
  const Lowering o = lower(build_layer(llama32, 1, decode(8, 2048)),
                           grouping("fused", "kernel", "kernel", "flash"));
  EXPECT_FALSE(o.available());
  EXPECT_TRUE(o.kernels.empty());
  EXPECT_NE(o.unavailable.find("rope_scaling (factor 32,"), std::string::npos) << o.unavailable;
}

TEST(Lowering, StructuralKeysHashWhatIsComputedNotNames) {
  const ModelConfig m = qwen_embedding();
  const Grouping gr = grouping("fused", "kernel", "kernel", "flash");
  const Lowering l3 = lower(build_layer(m, 3, prefill(8, 512)), gr, with_new_families);
  const Lowering l5 = lower(build_layer(m, 5, prefill(8, 512)), gr, with_new_families);
  ASSERT_EQ(l3.kernels.size(), l5.kernels.size());
  for (std::size_t i = 0; i < l3.kernels.size(); ++i)
    EXPECT_EQ(l3.kernels[i].key(), l5.kernels[i].key()) << i;
  // The input and post-attention norms of a later layer compute the same thing: one key.
  EXPECT_EQ(l3.kernels[0].key(), l3.kernels[5].key());
  // Layer 0's input norm adds no residual: another kernel.
  const Lowering l0 = lower(build_layer(m, 0, prefill(8, 512)), gr, with_new_families);
  EXPECT_NE(l0.kernels[0].key(), l3.kernels[0].key());
  // The split and fused attention are one problem in two forms: two keys.
  const Lowering split = lower(build_layer(m, 3, prefill(8, 512)),
                               grouping("fused", "kernel", "kernel", "split"), with_new_families);
  EXPECT_EQ(split.kernels[3].problem.structural_key(), l3.kernels[3].problem.structural_key());
  EXPECT_NE(split.kernels[3].key(), l3.kernels[3].key());
  // Another shape, another key.
  const Lowering other = lower(build_layer(m, 3, prefill(8, 256)), gr, with_new_families);
  EXPECT_NE(other.kernels[1].key(), l3.kernels[1].key());
}

TEST(Form, AdmitsConfigsByTheirStructuralKnob) {
  auto split = Config::parse("kernel=split,block_n=128");
  auto wgmma = Config::parse("kernel=wgmma,block_n=64");
  ASSERT_TRUE(split && wgmma);
  const Form fused{"kernel", {"split"}, true}, chain{"kernel", {"split"}, false}, any{};
  EXPECT_TRUE(fused.admits(*wgmma));
  EXPECT_FALSE(fused.admits(*split));
  EXPECT_TRUE(chain.admits(*split));
  EXPECT_FALSE(chain.admits(*wgmma));
  EXPECT_TRUE(any.admits(*split));
  EXPECT_EQ(fused.text(), "kernel!=split");
  EXPECT_EQ(any.text(), "");
}

}  // namespace
}  // namespace attune::graph
