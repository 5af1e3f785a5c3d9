// Model configs: the four shipped files load with their published values, and bad files are
// refused in one line naming the file and the field.
#include <gtest/gtest.h>

#include "graph/model.h"

namespace attune::graph {
namespace {

std::string model_path(const std::string& file) {
  return std::string(ATTUNE_SOURCE_DIR) + "/models/" + file;
}

TEST(ModelConfig, ShippedConfigsCarryThePublishedValues) {
  auto e = load_model(model_path("qwen3-embedding-0.6b.json"));
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->hidden_size, 1024);
  EXPECT_EQ(e->intermediate_size, 3072);
  EXPECT_EQ(e->num_attention_heads, 16);
  EXPECT_EQ(e->num_key_value_heads, 8);
  EXPECT_EQ(e->head_dim, 128);
  EXPECT_EQ(e->num_hidden_layers, 28);
  EXPECT_DOUBLE_EQ(e->rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(e->rope_theta, 1e6);
  EXPECT_TRUE(e->qk_norm);
  EXPECT_FALSE(e->rope_scaling);

  auto q8 = load_model(model_path("qwen3-8b.json"));
  ASSERT_TRUE(q8) << q8.error().message();
  EXPECT_EQ(q8->hidden_size, 4096);
  EXPECT_EQ(q8->intermediate_size, 12288);
  EXPECT_EQ(q8->num_attention_heads, 32);
  EXPECT_EQ(q8->num_hidden_layers, 36);

  auto q06 = load_model(model_path("qwen3-0.6b.json"));
  ASSERT_TRUE(q06) << q06.error().message();
  EXPECT_EQ(q06->num_hidden_layers, 28);

  auto llama = load_model(model_path("llama-3.1-8b.json"));
  ASSERT_TRUE(llama) << llama.error().message();
  EXPECT_EQ(llama->intermediate_size, 14336);
  EXPECT_EQ(llama->num_hidden_layers, 32);
  EXPECT_DOUBLE_EQ(llama->rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(llama->rope_theta, 5e5);
  EXPECT_FALSE(llama->qk_norm);
  ASSERT_TRUE(llama->rope_scaling);
  EXPECT_EQ(llama->rope_scaling->rope_type, "llama3");
  EXPECT_DOUBLE_EQ(llama->rope_scaling->factor, 8);
  EXPECT_DOUBLE_EQ(llama->rope_scaling->low_freq_factor, 1);
  EXPECT_DOUBLE_EQ(llama->rope_scaling->high_freq_factor, 4);
  EXPECT_EQ(llama->rope_scaling->original_max_position_embeddings, 8192);
}

constexpr const char* kGood = R"({"name": "m", "hidden_size": 64, "intermediate_size": 128,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2,
  "rms_norm_eps": 1e-6, "rope_theta": 10000, "qk_norm": false})";

// The one line a broken variant of kGood gets.
std::string refusal(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  auto r = parse_model(text, "x.json");
  EXPECT_FALSE(r) << text;
  if (r) return "";
  EXPECT_EQ(r.error().message().find('\n'), std::string::npos);
  return r.error().message();
}

TEST(ModelConfig, BadFilesAreRefusedInOneLineNamingTheField) {
  ASSERT_TRUE(parse_model(kGood, "x.json"));
  {
    const std::string m = refusal(R"("hidden_size": 64)", R"("hidden_size": -64)");
    EXPECT_NE(m.find("x.json: hidden_size must be a positive integer"), std::string::npos) << m;
  }
  EXPECT_NE(refusal(R"("head_dim": 16,)", "").find("head_dim is missing"), std::string::npos);
  EXPECT_NE(refusal(R"("qk_norm": false)", R"("qk_norm": "no")").find("qk_norm must be true"),
            std::string::npos);
  EXPECT_NE(refusal(R"("rope_theta": 10000)", R"("rope_theta": 10000, "hiden": 3)")
                .find("unknown field 'hiden'"),
            std::string::npos);
  EXPECT_NE(refusal(R"("num_key_value_heads": 2)", R"("num_key_value_heads": 3)")
                .find("not a multiple of num_key_value_heads 3"),
            std::string::npos);
  EXPECT_NE(refusal(R"("head_dim": 16)", R"("head_dim": 15)").find("head_dim must be even"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"("qk_norm": false)", R"("qk_norm": false, "rope_scaling": {"rope_type": "yarn"})")
          .find("rope_scaling.rope_type 'yarn' is not known"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"name")", R"([{"name")").find("not JSON"), std::string::npos);
  auto missing = load_model("/nonexistent/model.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("model config /nonexistent/model.json does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace attune::graph
