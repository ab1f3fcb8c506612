// libFuzzer target: AMP policy files, JSON and YAML (amp/policy_file.cc).
//
// The text is the file's content (JSON when its first non-blank character is
// '{', YAML otherwise). Every input must give a Policy or a Status; a policy
// that parses compiles, and its patterns are matched against a few names.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "amp/amp_internal.h"
#include "amp/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace amptrain;
  const std::string text(reinterpret_cast<const char*>(data), size);
  StatusOr<amp::Policy> policy = amp::ParsePolicyText(text, "fuzz.policy");
  if (!policy.ok()) return 0;
  StatusOr<amp::internal::CompiledPolicy> compiled = amp::internal::CompiledPolicy::Compile(*policy);
  if (!compiled.ok()) {  // ParsePolicyText validated it: compiling cannot fail
    std::fprintf(stderr, "fuzz_policy: a parsed policy does not compile: %s\n", compiled.status().ToString().c_str());
    std::abort();
  }
  for (const std::string& name : {std::string("conv1"), std::string(4000, 'a') + "b", text.substr(0, 256)}) {
    (void)compiled->OverrideFor(name);
    for (size_t slot = 0; slot < 3; ++slot) (void)compiled->PinFor(name, slot);
  }
  return 0;
}
