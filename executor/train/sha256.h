// SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex digits; the
// checksum checkpoints record for each file so corruption is detected.
#pragma once

#include <string>
#include <string_view>

namespace amptrain::executor::train {

std::string Sha256Hex(std::string_view bytes);

}  // namespace amptrain::executor::train
