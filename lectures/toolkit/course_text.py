"""A short text about attention, written for this course, to train tiny character-level models.

Nothing may be downloaded when a lecture runs, and a text we wrote ourselves has no licence
questions. It is small on purpose: a model with a few thousand parameters can learn its
spelling and common words in a few hundred steps on a laptop CPU.
"""

ATTENTION_TEXT = """\
Attention is a way for a model to decide where to look. Each word asks a question, the query,
and every word offers a label, the key, and some content, the value. The query is compared with
every key, the scores are turned into weights that sum to one, and the answer is the weighted
average of the values. A hard lookup would return one value; attention returns a blend, and
because the blend is smooth, the model can learn where to look by gradient descent.

In a Transformer every word attends to every other word at once. Nothing has to wait for the
previous step, so the whole sentence is processed in parallel. Several heads look at the same
words in different ways: one head may follow the previous word, another may find the verb that
goes with a noun. The heads are joined again and mixed by a linear layer.

Attention alone does not know the order of the words. A sentence and its shuffled copy would
give the same set of answers. So we add a position to every word before the first layer, either
a learned vector or a pattern of sines and cosines.

A block of the Transformer has two parts. First the words talk to each other through attention;
then each word thinks on its own through a small network. Around each part there is a residual
path that adds the input back to the output, and a layer norm that keeps the numbers in a good
range. Stack many blocks and the model can learn to translate, to answer, and to write.

A language model reads the text one character at a time and learns to guess the next one. It
may only look at the past, so its attention is masked: no word can peek at the words that come
after it. After training, the model can write new text by guessing one character, adding it to
the input, and guessing again.
"""
