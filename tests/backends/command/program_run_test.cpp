#include "backends/command/program_run.h"

#include <gtest/gtest.h>

namespace attune::command {
namespace {

Provider provider(std::vector<std::string> json_fields, std::string regex = "") {
  Provider p;
  p.output.json_fields = std::move(json_fields);
  if (!regex.empty()) {
    p.throughput.kind = ThroughputSpec::Kind::kRegex;
    p.throughput.regex = std::move(regex);
  }
  return p;
}

TEST(Normalize, KeepsOnlyTheNamedJsonFieldsOfEachRecord) {
  Provider p = provider({"id", "text"});
  auto a = normalize_output(
      p, "{\"id\": 1, \"text\": \"a\", \"ms\": 3.1}\n{\"text\": \"b\", \"id\": 2}\n");
  auto b = normalize_output(
      p, "{\"ms\": 9, \"id\": 1, \"text\": \"a\"}\n\n{\"id\": 2, \"text\": \"b\"}\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  // A missing field is null, so losing it is a change.
  auto c = normalize_output(p, "{\"id\": 1}\n{\"id\": 2, \"text\": \"b\"}\n");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*a, *c);
}

TEST(Normalize, ReadsOneJsonDocumentToo) {
  Provider p = provider({"v"});
  auto a = normalize_output(p, "[{\"v\": 1, \"t\": 5}, {\"v\": 2, \"t\": 6}]");
  auto b = normalize_output(p, "[\n  {\"t\": 7, \"v\": 1},\n  {\"v\": 2}\n]\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(Normalize, OutputThatIsNotJsonIsAnErrorNamingTheLine) {
  auto r = normalize_output(provider({"id"}), "{\"id\": 1}\nSegfault in worker\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "output line 2 is not JSON: 'Segfault in worker'");
}

TEST(Normalize, ThroughputLinesOnStdoutAreDropped) {
  Provider p = provider({}, "rps=([0-9.]+)");
  EXPECT_EQ(normalize_output(p, "a\nrps=10.5\nb\n").value(), "a\nb\n");
  EXPECT_EQ(normalize_output(p, "a\nrps=99\nb\n").value(), "a\nb\n");
  // Without json_fields or a regex the output is compared byte for byte.
  EXPECT_EQ(normalize_output(provider({}), "a\r\nb").value(), "a\r\nb");
}

TEST(FirstDifference, NamesTheFirstDifferingLine) {
  EXPECT_EQ(first_difference("a\nb\n", "a\nb\n"), "");
  EXPECT_EQ(first_difference("a\nX\nc\n", "a\nb\nc\n"), "line 2: 'X', the baseline has 'b'");
  EXPECT_EQ(first_difference("a\n", "a\nb\n"), "line 2: missing (the baseline has 'b')");
  EXPECT_EQ(first_difference("a\nb\n", "a\n"),
            "line 2: 'b' is extra (the baseline ends before it)");
  std::string longer(200, 'x');
  EXPECT_EQ(first_difference(longer, "y").size(),
            std::string("line 1: '', the baseline has 'y'").size() + 80);
}

TEST(Rejection, TheReasonTravelsInTheOutcomeMessage) {
  Outcome o = rejected(Rejection::kTelltale, "telltale 'X' in stderr (exit code 0)");
  EXPECT_EQ(o.verdict, Verdict::kCrashed);
  EXPECT_EQ(o.message, "telltale: telltale 'X' in stderr (exit code 0)");
  auto back = rejection_of(o.message);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->first, Rejection::kTelltale);
  EXPECT_EQ(back->second, "telltale 'X' in stderr (exit code 0)");
  Outcome changed = rejected(Rejection::kOutputChanged, "line 3 differs");
  EXPECT_EQ(changed.verdict, Verdict::kWrongOutput);
  ASSERT_TRUE(changed.check);
  EXPECT_EQ(changed.check->metric, kDigestCheck);
  EXPECT_GT(changed.check->value, changed.check->tolerance);
  EXPECT_FALSE(rejection_of("deploy regime: something else"));
  EXPECT_FALSE(rejection_of("no colon"));
}

TEST(Rejection, NamesAndVerdictsAreStable) {
  for (auto r : {Rejection::kCrash, Rejection::kSignal, Rejection::kTimeout, Rejection::kTelltale,
                 Rejection::kOutputChanged, Rejection::kNoThroughput})
    EXPECT_EQ(rejection_from_string(to_string(r)), r);
  EXPECT_EQ(to_string(Rejection::kOutputChanged), "output_changed");
  EXPECT_EQ(verdict_of(Rejection::kCrash), Verdict::kCrashed);
  EXPECT_EQ(verdict_of(Rejection::kSignal), Verdict::kCrashed);
  EXPECT_EQ(verdict_of(Rejection::kTelltale), Verdict::kCrashed);
  EXPECT_EQ(verdict_of(Rejection::kTimeout), Verdict::kTimeout);
  EXPECT_EQ(verdict_of(Rejection::kOutputChanged), Verdict::kWrongOutput);
}

}  // namespace
}  // namespace attune::command
