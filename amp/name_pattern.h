// Node name patterns of AMP policies: an exact name, or a regex ("re:..." in
// flags and policy files) that must match the whole name.
//
// Node names come from the (untrusted) model, so regexes run on RE2: matching
// takes time linear in the name's length whatever the pattern ('(a+)+$'
// against 4,000 'a's and a 'b' is one pass, where std::regex backtracked for
// ever). RE2 syntax is Perl's without backreferences and lookaround; a pattern
// using them is refused as an invalid regex. Names and patterns are matched as
// bytes (Latin-1 mode), so a name that is not valid UTF-8 can still be matched
// (".*" matches every name) and '.' is one byte, as with std::regex before.
// RE2's own bounds (repetition counts up to 1000, 8 MiB of compiled program)
// refuse a pattern that is too large, with its reason.
#pragma once

#include <memory>
#include <string>

#include "ir/status.h"

namespace re2 {
class RE2;
}

namespace amptrain::amp::internal {

class NamePattern {
 public:
  // Error naming `what` ("fp32_nodes entry '(['") when the pattern is empty or
  // the regex is invalid.
  static StatusOr<NamePattern> Compile(const std::string& pattern, bool is_regex, const std::string& what);
  bool Matches(const std::string& name) const;

 private:
  std::string text_;
  std::shared_ptr<const re2::RE2> re_;  // null for an exact name; RE2 is const-thread-safe
};

}  // namespace amptrain::amp::internal
