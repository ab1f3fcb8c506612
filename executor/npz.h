// NumPy .npz archives: what np.savez (members stored) and
// np.savez_compressed (members deflated) write, a ZIP file of .npy members.
//
// The reader takes the central directory (ZIP64 records and extra fields
// included, as NumPy writes them) and, for each member whose name ends in
// ".npy", the array ParseNpy makes of its bytes, named as np.load names it
// (the member name without ".npy"). Members in other formats are skipped.
// Refused, each with a Status naming the archive and the member: encryption,
// compression methods other than stored and deflate, split archives, a
// member whose bytes lie outside the file or overlap the directory, sizes
// that disagree with what inflates, a bad CRC-32, two members of one name.
// Deflated members are inflated into buffers bounded by the declared size,
// which itself must be within deflate's largest ratio (1032:1) of the
// compressed size: a small archive cannot make the reader allocate much.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor {

using NpzArrays = std::vector<std::pair<std::string, ir::Tensor>>;  // in the archive's order

StatusOr<NpzArrays> ReadNpz(const std::string& path);
// Parses the bytes of a .npz file; `label` names it in errors.
StatusOr<NpzArrays> ParseNpz(const std::string& bytes, const std::string& label);

}  // namespace amptrain::executor
