// Node name patterns (issue 9 F4): regexes run on RE2, so a pattern that makes
// a backtracking engine exponential matches in linear time; full-match
// semantics; invalid regexes are errors naming the entry.
#include "amp/name_pattern.h"

#include <gtest/gtest.h>

#include <string>

namespace amptrain::amp::internal {
namespace {

NamePattern Re(const std::string& pattern) {
  StatusOr<NamePattern> p = NamePattern::Compile(pattern, true, "test entry");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

TEST(NamePattern, NestedQuantifierIsLinear) {
  // std::regex backtracks exponentially here: 27 characters took 5 s and
  // 4,000 never ended. ctest's --timeout is the bound on this test.
  NamePattern p = Re("(a+)+$");
  std::string name(4000, 'a');
  EXPECT_TRUE(p.Matches(name));
  EXPECT_FALSE(p.Matches(name + "b"));
}

TEST(NamePattern, FullMatch) {
  NamePattern p = Re("layer4\\..*");
  EXPECT_TRUE(p.Matches("layer4.conv1"));
  EXPECT_FALSE(p.Matches("xlayer4.conv1"));  // anchored at the start
  EXPECT_FALSE(Re("conv").Matches("conv1"));  // and at the end
  EXPECT_TRUE(Re("conv|fc").Matches("fc"));   // alternation binds looser than the anchors
  EXPECT_FALSE(Re("conv|fc").Matches("conv_fc"));
}

TEST(NamePattern, ExactNames) {
  StatusOr<NamePattern> p = NamePattern::Compile("a.b", false, "entry");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->Matches("a.b"));
  EXPECT_FALSE(p->Matches("axb"));  // not a regex
}

TEST(NamePattern, BytesNotUtf8) {
  // A node name need not be valid UTF-8 (issue 9 F16); it can still be matched.
  EXPECT_TRUE(Re(".*").Matches("w\xff\xfe"));
  EXPECT_TRUE(Re("w..").Matches("w\xff\xfe"));
  EXPECT_TRUE(Re("\xce\xb1.*").Matches("\xce\xb1_conv"));  // a UTF-8 literal matches its bytes
}

TEST(NamePattern, ErrorsNameTheEntry) {
  StatusOr<NamePattern> bad = NamePattern::Compile("layer1.(", true, "fp32_nodes entry 'layer1.('");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp32_nodes entry 'layer1.(': invalid regex 'layer1.('"), std::string::npos)
      << bad.status().message();
  // Backreferences and lookaround need backtracking: RE2 refuses them.
  EXPECT_FALSE(NamePattern::Compile("(a)\\1", true, "e").ok());
  EXPECT_FALSE(NamePattern::Compile("a(?=b)", true, "e").ok());
  StatusOr<NamePattern> empty = NamePattern::Compile("", true, "pin on ''");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty node name pattern"), std::string::npos);
}

}  // namespace
}  // namespace amptrain::amp::internal
