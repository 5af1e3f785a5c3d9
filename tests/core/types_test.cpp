#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/device.h"
#include "core/measurement.h"
#include "core/problem.h"
#include "core/verdict.h"

namespace attune {
namespace {

TEST(Verdict, NamesRoundTrip) {
  for (Verdict v : kAllVerdicts) EXPECT_EQ(verdict_from_string(to_string(v)), v);
  EXPECT_FALSE(verdict_from_string("exploded"));
  EXPECT_EQ(to_string(Verdict::kWrongOutput), "wrong_output");
}

TEST(Config, CanonicalTextAndStableHash) {
  Config c({{"block", 128}, {"vec", 4}, {"algo", "tma"}, {"alpha", 0.5}});
  EXPECT_EQ(c.text(), "block=128,vec=4,algo=tma,alpha=0.5");
  // The hash is stored in databases: pinned so a change to it is caught.
  EXPECT_EQ(c.hash_hex(), Config::parse(c.text())->hash_hex());
  EXPECT_EQ(Config({{"a", 1}}).hash_hex(), "e650e41904922b36") << "fnv1a64 of 'a=1' changed";
  EXPECT_FALSE(Config::parse("a=1,a=2").ok());
  EXPECT_FALSE(Config::parse("a").ok());
  EXPECT_FALSE(Config::parse("=1").ok());
}

TEST(Problem, StructuralKeyIgnoresNameAndAttributeOrder) {
  auto a = Problem::parse("gemm:m=1,n=4096,k=1024,dtype=bf16");
  auto b = Problem::parse("gemm:dtype=bf16,k=1024,m=1,n=4096");
  ASSERT_TRUE(a.ok() && b.ok());
  b->set_name("layer0.q_proj");
  EXPECT_EQ(a->structural_key(), b->structural_key());
  EXPECT_EQ(b->name(), "layer0.q_proj");
  EXPECT_EQ(a->text(), "gemm:dtype=bf16,k=1024,m=1,n=4096");
  auto c = Problem::parse("gemm:m=2,n=4096,k=1024,dtype=bf16");
  EXPECT_NE(a->structural_key(), c->structural_key());
  EXPECT_EQ(*a->int_attr("n"), 4096);
  EXPECT_FALSE(a->int_attr("dtype").ok());
}

TEST(Problem, MalformedSpecsAreRefused) {
  EXPECT_FALSE(Problem::parse("").ok());
  EXPECT_FALSE(Problem::parse("gemm:m").ok());
  EXPECT_FALSE(Problem::parse("gemm:m=").ok());
  EXPECT_FALSE(Problem::parse("gemm:m=1,m=2").ok());
  EXPECT_FALSE(Problem::parse("ge mm:m=1").ok());
  EXPECT_TRUE(Problem::parse("faults").ok());
}

TEST(DeviceFingerprint, KeyCoversKeyFieldsOnly) {
  DeviceFingerprint a{"cuda", "NVIDIA H200", "sm_90", 132, 150ull << 30};
  DeviceFingerprint b = a;
  b.driver_version = "580.1";
  b.max_sm_clock_mhz = 1980;
  EXPECT_EQ(a.key(), b.key());
  b.sm_count = 114;  // another SKU or a MIG slice is another device
  EXPECT_NE(a.key(), b.key());
  EXPECT_EQ(a.slug(), "nvidia-h200-sm_90-132sm");
  nlohmann::json j = a;
  auto back = device_from_json(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->key(), a.key());
}

TEST(Outcome, JsonRoundTripKeepsNaNErrors) {
  Outcome o;
  o.verdict = Verdict::kNonFinite;
  o.check = ErrorCheck{"max_rel_err", std::nan(""), 1e-3};
  o.message = "3 of 64 outputs are NaN";
  nlohmann::json j = o;
  auto back = outcome_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->verdict, Verdict::kNonFinite);
  ASSERT_TRUE(back->check);
  EXPECT_TRUE(std::isnan(back->check->value));
  EXPECT_EQ(back->message, o.message);
}

}  // namespace
}  // namespace attune
