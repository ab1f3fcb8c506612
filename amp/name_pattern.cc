// NamePattern: exact names, and regexes on RE2 (linear-time full matches).
#include "amp/name_pattern.h"

#include <re2/re2.h>

namespace amptrain::amp::internal {
namespace {

// Memory for one compiled pattern (RE2's default; docs/limits.md). RE2 also
// refuses repetition counts above 1000 ("a{1001}"), a bound of its own.
constexpr int64_t kMaxRegexProgramBytes = 8 << 20;

}  // namespace

StatusOr<NamePattern> NamePattern::Compile(const std::string& pattern, bool is_regex, const std::string& what) {
  if (pattern.empty()) return InvalidArgument(what, ": empty node name pattern");
  NamePattern p;
  p.text_ = pattern;
  if (is_regex) {
    RE2::Options options(RE2::Latin1);
    options.set_log_errors(false);  // the error goes into the Status instead
    options.set_max_mem(kMaxRegexProgramBytes);
    auto re = std::make_shared<const RE2>(pattern, options);
    if (!re->ok()) return InvalidArgument(what, ": invalid regex '", pattern, "': ", re->error());
    p.re_ = std::move(re);
  }
  return p;
}

bool NamePattern::Matches(const std::string& name) const {
  return re_ ? RE2::FullMatch(name, *re_) : name == text_;
}

}  // namespace amptrain::amp::internal
