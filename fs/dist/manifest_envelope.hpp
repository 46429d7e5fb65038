// The start-up broadcast of the manifest: rank 0 reads it and every rank
// receives either its bytes or the error that stopped rank 0.
//
//   envelope:  1, then the manifest bytes   (rank 0 read it)
//              0, then rank 0's error text  (it could not)
//
// The envelope only carries the bytes; Manifest::Parse checks them. Pure
// functions; thread-safe.
#pragma once

#include <vector>

#include "base/status.hpp"

namespace clairfs::fs {

std::vector<char> EncodeManifestEnvelope(const Result<std::vector<char>>& manifest);

// The manifest bytes, or IOError with rank 0's message (an empty envelope
// reads as an error with no message).
Result<std::vector<char>> DecodeManifestEnvelope(std::vector<char> envelope);

}  // namespace clairfs::fs
