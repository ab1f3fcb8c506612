#include "ir/einsum_equation.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace amptrain::ir {

namespace {

std::string Trim(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ') out += c;
  return out;
}

std::vector<std::string> SplitTerms(const std::string& s) {
  std::vector<std::string> terms(1);
  for (char c : s) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  return terms;
}

// Replaces "..." in `term` by `count` ellipsis labels '0', '1', ... (the last
// ones: numpy aligns ellipsis dims from the right).
StatusOr<std::string> ExpandEllipsis(const std::string& term, size_t count, size_t max_count) {
  size_t at = term.find("...");
  if (at == std::string::npos) return term;
  if (term.find("...", at + 1) != std::string::npos) return InvalidArgument("two ellipses in '", term, "'");
  std::string dims;
  for (size_t i = max_count - count; i < max_count; ++i) dims += static_cast<char>('0' + i);
  return term.substr(0, at) + dims + term.substr(at + 3);
}

size_t Letters(const std::string& term) {
  return static_cast<size_t>(std::count_if(term.begin(), term.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }));
}

StatusOr<EinsumEquation> Parse(const std::string& equation, const std::vector<size_t>& ranks) {
  const std::string eq = Trim(equation);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = SplitTerms(lhs);
  if (terms.size() != ranks.size())
    return InvalidArgument(terms.size(), " input terms for ", ranks.size(), " inputs");
  size_t ellipsis = 0;  // dims the ellipsis stands for (the most over inputs)
  for (size_t i = 0; i < terms.size(); ++i) {
    for (char c : terms[i])
      if (!std::isalpha(static_cast<unsigned char>(c)) && c != '.')
        return InvalidArgument("the character '", c, "'");
    const size_t letters = Letters(terms[i]);
    const bool has = terms[i].find("...") != std::string::npos;
    if ((!has && letters != ranks[i]) || (has && letters > ranks[i]))
      return InvalidArgument("term '", terms[i], "' does not match input ", i, " of rank ", ranks[i]);
    if (has) ellipsis = std::max(ellipsis, ranks[i] - letters);
  }
  if (ellipsis > 10) return InvalidArgument("an ellipsis of more than 10 dims");
  EinsumEquation out;
  for (size_t i = 0; i < terms.size(); ++i) {
    AMP_ASSIGN_OR_RETURN(std::string t, ExpandEllipsis(terms[i], ranks[i] - Letters(terms[i]), ellipsis));
    out.inputs.push_back(t);
  }
  if (arrow != std::string::npos) {
    AMP_ASSIGN_OR_RETURN(out.output, ExpandEllipsis(eq.substr(arrow + 2), ellipsis, ellipsis));
  } else {  // implicit: the ellipsis dims, then the letters used once, sorted
    std::map<char, int> count;
    for (const std::string& t : out.inputs)
      for (char c : t) ++count[c];
    for (size_t i = 0; i < ellipsis; ++i) out.output += static_cast<char>('0' + i);
    for (const auto& [c, n] : count)
      if (std::isalpha(static_cast<unsigned char>(c)) && n == 1) out.output += c;
  }
  for (char c : out.output) {
    bool found = std::any_of(out.inputs.begin(), out.inputs.end(), [c](const std::string& t) { return t.find(c) != std::string::npos; });
    if (!found) return InvalidArgument("output label '", std::string(1, c), "' is in no input");
    if (std::count(out.output.begin(), out.output.end(), c) > 1)
      return InvalidArgument("output label '", std::string(1, c), "' is repeated");
  }
  return out;
}

}  // namespace

StatusOr<EinsumEquation> ParseEinsum(const std::string& equation, const std::vector<size_t>& ranks) {
  auto eq = Parse(equation, ranks);
  if (!eq.ok()) return InvalidArgument("equation '", equation, "': ", eq.status().message());
  return eq;
}

}  // namespace amptrain::ir
