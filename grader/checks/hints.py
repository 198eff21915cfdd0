"""Hints for the Python and PyTorch errors students meet most often.

Each entry: a piece of the error's text, the hint, and the cause it proves (or None). A hint is
shown only when the text is in the error, so it never guesses at an unrelated failure.
"""

from __future__ import annotations

HINTS = [
    ("Torch not compiled with CUDA", "the code asks for a GPU this machine does not have",
     "device_hard_coded"),
    ("Found no NVIDIA driver", "the code asks for a GPU this machine does not have",
     "device_hard_coded"),
    ("Expected all tensors to be on the same device",
     "create new tensors on the device of the inputs (device=x.device)", None),
    ("leaf Variable that requires grad is being used in an in-place operation",
     "the function changed one of its input tensors in place (x -= ..., x[...] = ..., "
     "x.masked_fill_); work on a new tensor instead (x = x - ...)", "inplace_input"),
    ("is only implemented on integer and Boolean-type tensors",
     "~ works on boolean tensors: is a mask a float or an integer tensor? Masks should be "
     "torch.bool (compare with == or call .bool())", None),
    ("shapes cannot be multiplied",
     "the two sides of @ do not fit: print their shapes; a transpose may be missing", None),
    ("must match the size of tensor b",
     "two tensors with different sizes on the same axis were combined: print their shapes", None),
    ("view size is not compatible with input tensor's size and stride",
     ".view needs a tensor laid out contiguously in memory, and this one is not (a transposed "
     "or sliced view, which an input may be): use .reshape(...) (or .contiguous().view(...))",
     None),
    ("expected scalar type", "a tensor was created with a dtype other than the inputs' "
     "(pass dtype=x.dtype when you create it)", None),
    ("to have the same dtype", "a tensor was created with a dtype other than the inputs' "
     "(pass dtype=x.dtype when you create it)", None),
    ("Can't call numpy() on Tensor that requires grad",
     "stay with torch operations so gradients can flow (or .detach() before .numpy())", None),
    ("index out of range in self", "an index is larger than its table: a token id or a "
     "position beyond the embedding's size (max_len)?", None),
    ("Boolean value of Tensor with more than one value is ambiguous",
     "if, and, or need one True/False: use .all(), .any() or torch.where on tensors", None),
    ("Dimension out of range", "the tensor has fewer axes than the code assumes: print its "
     "shape", None),
    ("is not defined", "a name is used before the cell that defines it was run, or it is "
     "misspelled", None),
]


def hint_for(message: str) -> tuple[str, str | None] | None:
    """(hint, proven cause or None) for an error message, or None when no hint applies."""
    for text, hint, cause in HINTS:
        if text in message:
            return hint, cause
    return None
