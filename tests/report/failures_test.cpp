#include "report/failures.h"

#include <gtest/gtest.h>

namespace attune {
namespace {

MeasurementRow failing(std::int64_t id, const std::string& config, Verdict v) {
  MeasurementRow r;
  r.id = id;
  r.problem_key = "p";
  r.backend = "sim";
  r.config = config;
  r.outcome.verdict = v;
  r.outcome.message = "why " + config;
  return r;
}

TEST(Failures, GroupsByVerdictAndSharedKnobValues) {
  std::vector<MeasurementRow> rows = {
      failing(1, "a=1,b=1,c=1", Verdict::kCrashed), failing(2, "a=1,b=1,c=2", Verdict::kCrashed),
      failing(3, "a=2,b=3,c=1", Verdict::kCrashed), failing(4, "a=2,b=3,c=2", Verdict::kCrashed),
      failing(5, "a=3,b=1,c=1", Verdict::kTimeout), failing(6, "a=3,b=2,c=2", Verdict::kOk),
  };
  auto groups = group_failures(rows);
  ASSERT_EQ(groups.size(), 3u);
  // The two crash causes share nothing with each other, so they are split apart.
  EXPECT_EQ(groups[0].verdict, Verdict::kCrashed);
  EXPECT_EQ(groups[0].shared,
            (std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "1"}}));
  EXPECT_EQ(groups[0].configs.size(), 2u);
  EXPECT_EQ(groups[1].shared,
            (std::vector<std::pair<std::string, std::string>>{{"a", "2"}, {"b", "3"}}));
  EXPECT_EQ(groups[2].verdict, Verdict::kTimeout);
  EXPECT_EQ(groups[2].configs, std::vector<std::string>{"a=3,b=1,c=1"});
  EXPECT_EQ(groups[2].sample_message, "why a=3,b=1,c=1");
}

TEST(Failures, TheNewestRowOfAConfigDecides) {
  std::vector<MeasurementRow> rows = {failing(1, "a=1", Verdict::kTimeout),
                                      failing(2, "a=1", Verdict::kOk)};
  EXPECT_TRUE(group_failures(rows).empty());
}

}  // namespace
}  // namespace attune
