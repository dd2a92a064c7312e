// The checks and trivial cases the algorithms start with, written once.
// Each throws Failure (HVD_ERR_INVALID_ARGUMENT) naming `reducer` when the
// buffers are malformed.
#pragma once

#include <cstddef>

#include "collective.h"
#include "task.h"

namespace hvd::reducers {

// Allreduce: checks that send and recv do not overlap unless they are the
// same; builds the whole collective when it needs no message (no elements,
// or a team of one). True when that was all there is to build.
bool allreduce_without_messages(hvd_task_s& task, const Collective& c,
                                const char* reducer);

// Allgather: copies this rank's block from send into its place in recv
// (unless it is already there); true when it was (in place).
bool place_own_block(hvd_task_s& task, const Collective& c,
                     const char* reducer);

// Reducescatter: the element just past the last block of send, checked
// against count; 0 when no block has an element (nothing to reduce).
size_t reducescatter_extent(const Collective& c, const char* reducer);

}  // namespace hvd::reducers
