r"""A paper's notation (``d``, ``\sigma^2``, ``\mathbb{E}``, ``\mathrm{LN}(x)``) in the claim language."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from derivations.claims import ClaimError
from derivations.claims import latex as claim_latex

# What a paper calls a layer, and the catalog key it means unless the paper defines it otherwise.
LAYER_NAMES = {
    "LN": "layernorm",
    "LayerNorm": "layernorm",
    "layernorm": "layernorm",
    "RMSNorm": "rmsnorm",
    "RMSnorm": "rmsnorm",
    "rmsnorm": "rmsnorm",
    "DyT": "dyt",
    "GN": "groupnorm",
    "GroupNorm": "groupnorm",
    "BN": "batchnorm_train",
    "BatchNorm": "batchnorm_train",
    "ScaleNorm": "scalenorm",
    "pRMSNorm": "prmsnorm",
}
RELATIONS = {
    "=": "==",
    "<": "<",
    ">": ">",
    "\\le": "<=",
    "\\leq": "<=",
    "\\leqslant": "<=",
    "\\ge": ">=",
    "\\geq": ">=",
    "\\geqslant": ">=",
}
# Relations read but not decided, and the definitions' own signs.
UNDECIDED = {"\\neq", "\\ne", "\\approx", "\\sim", "\\propto", "\\simeq", "\\ll", "\\gg", "\\cong"}
DEFINING = {"\\coloneqq", ":=", "\\triangleq", "\\equiv", "\\stackrel{\\text{def}}{=}"}
# Vectors and matrices by name; entries x_i are read as their vector.
VECTORS = {"x", "y", "ones", "c", "g", "v"}
MATRICES = {"J", "I"}
ENTRIES = {"x", "y", "g", "c", "v", "gamma", "beta"}
SCALAR_CALLS = {"norm", "sum", "mean", "dot", "trace", "det"}
MATRIX_CALLS = {"outer", "diag"}
# Statistics a paper writes, as expressions of x where a layer has no symbol for them.
STATISTICS = {
    "mu": "mean(x)",
    "q": "norm(x - mean(x) * ones) ** 2 / n",
    "r": "norm(x) ** 2 / n",
}
# Commands dropped before reading: spacing and sizing.
DROPPED = {
    *("\\displaystyle", "\\textstyle", "\\nonumber", "\\notag", "\\big", "\\Big", "\\bigg", "\\Bigg"),
    *("\\bigl", "\\bigr", "\\Bigl", "\\Bigr", "\\biggl", "\\biggr", "\\,", "\\;", "\\!", "\\:", "\\ ", "~"),
    *("\\mathstrut", "\\limits"),
}
_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|\s+|.", re.S)


def tokens(text: str) -> list[str]:
    return [token for token in _TOKEN.findall(text) if not token.isspace()]


# Where a paper uses m as the width: 1/m, a sum up to m.
WIDTH_M = re.compile(r"\\frac\s*\{\s*1\s*\}\s*\{\s*m\s*\}|\\sum_\{[^}]*\}\^\{?\s*m\b")
# Where a paper uses H as the width: 1/H, a sum up to H, R^H, H - 1, H bounded by a number.
WIDTH_H = re.compile(
    r"\\frac\s*\{\s*1\s*\}\s*\{\s*H\s*\}|\^\s*\{?\s*H\b|\\mathbb\{R\}\^\{?H|\bH\s*-\s*1\b|\\sqrt\{H\}"
    r"|\bH\s*(?:\\geq?|\\leq?|>|<)\s*\d"
)


@dataclass
class Notation:
    """The paper's spellings: ``overrides`` (paper LaTeX -> the symbol, from --notation and the
    source's comments) and ``layers`` (a paper's name for a layer -> catalog key)."""

    overrides: dict[str, str] = field(default_factory=dict)
    layers: dict[str, str] = field(default_factory=lambda: dict(LAYER_NAMES))
    # Whether H is the width n (Ba et al.'s H hidden units); a paper that never uses it as one has its own H.
    width_h: bool = True
    # Whether m is the width (Ioffe & Szegedy's batch of m, Wu & He's group of m): only where a paper uses it as one.
    width_m: bool = False

    @classmethod
    def parse(cls, entries: list[str]) -> Notation:
        """``SYMBOL=LATEX`` entries (``n=H``, ``q=\\nu``, ``layernorm=\\mathrm{Norm}``); ValueError names a bad one."""
        from derivations.catalog import LAYERS

        notation = cls()
        for entry in entries:
            symbol, equals, written = (part.strip() for part in entry.partition("="))
            if not equals or not symbol or not written:
                raise ValueError(f"notation {entry!r}: write SYMBOL=LATEX, e.g. n=H")
            if symbol in LAYERS:
                notation.layers[_word(written)] = symbol
            elif re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", symbol):
                notation.overrides[" ".join(tokens(written))] = symbol
            else:
                raise ValueError(f"notation {entry!r}: {symbol!r} is not a symbol of the claim language")
        return notation


def _word(written: str) -> str:
    """``\\mathrm{Norm}`` or ``Norm``: the name inside."""
    match = re.fullmatch(r"\\(?:mathrm|operatorname|text|mathit)\{(.*)\}", written.strip())
    return match.group(1) if match else written.strip().lstrip("\\")


@dataclass(frozen=True)
class Link:
    """One relation of a chain: LaTeX sides and the relation between them."""

    lhs: str
    relation: str
    rhs: str


def split(latex: str) -> list[Link]:
    """The links of a chain ``a = b \\le c``: relations at brace depth 0 split it; each side as written."""
    text = _tail(latex)
    cuts: list[tuple[int, int, str]] = []
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        depth += {"{": 1, "}": -1}.get(token, 0)
        if depth != 0:
            continue
        if token == "=" and cuts and cuts[-1][1] == match.start() and cuts[-1][2] == ":":
            cuts[-1] = (cuts[-1][0], match.end(), ":=")
        elif token in RELATIONS or token in UNDECIDED or token in DEFINING or token == ":":
            cuts.append((match.start(), match.end(), token))
    cuts = [cut for cut in cuts if cut[2] != ":"]
    bounds = [0, *[point for start, end, _ in cuts for point in (start, end)], len(text)]
    sides = [text[bounds[k] : bounds[k + 1]].strip() for k in range(0, len(bounds), 2)]
    return [Link(sides[k], cuts[k][2], sides[k + 1]) for k in range(len(cuts))]


# What separates two relations written in one row (``a = b, \\quad c = d``, ``\\text{where } c = d``),
# and what starts a condition on the relation before it (``\\quad \\text{for } t > 0``).
_SEPARATOR = re.compile(
    r"\\q?quad\b|\\text\{\s*(?:where|and|with)\s*\}|\\(?:text|mathrm)\{\s*,?\s*(?:where|and|with)\s+|,"
)
_CONDITION = re.compile(r"\s*(?:\\text\{\s*(?:for|if|as|when|whenever|since)\b|\\forall|\\text\{\s*,)")
_INDEX = re.compile(r"\s*[ijklm]\s*(?:=|\\in)")


def segments(latex: str) -> list[str]:
    """The relations one row writes side by side, ``a = b, \\quad \\text{where } c = d``: cut at
    commas, quads and a "where" outside brackets; a condition (``\\text{for } ...``, ``\\forall``)
    or an index range (``i = 1, \\ldots, n``) ends the row."""
    out: list[str] = []
    depth, start = 0, 0
    for match in _TOKEN.finditer(latex):
        token = match.group()
        depth += {"{": 1, "}": -1, "(": 1, ")": -1, "[": 1, "]": -1, "\\left": 1, "\\right": -1}.get(token, 0)
        if depth != 0 or match.start() < start:
            continue
        found = _SEPARATOR.match(latex, match.start())
        if found is None:
            continue
        out.append(latex[start : match.start()])
        start = found.end()
        if _CONDITION.match(latex, start) or _INDEX.match(latex, start):
            return [_trimmed(part) for part in out if _trimmed(part)]
    out.append(latex[start:])
    return [_trimmed(part) for part in out if _trimmed(part)]


# A condition a row states for its relations: after "for", "if", "when" or \forall, or a segment
# of its own that bounds a parameter (``\quad n \ge 3``, ``(H > 2)``).
_STATED = re.compile(
    r"\\text\{\s*(?:for|if|when|whenever)(?:\s+all)?\s*\}|\\text\{\s*(?:for|if|when|whenever)\s|\\forall"
)
_PARAMETER = re.compile(
    r"\(?\s*(?:n|d|H|N|\\epsilon|\\varepsilon|t)\s*(?:\\geq?|\\geqslant|>|\\leq?|\\leqslant|<|\\neq?)\s*-?[\d.]+\s*\)?"
)


def condition(latex: str) -> str:
    """The condition a row states for its relations (``\\quad \\text{for } n \\ge 3`` gives
    ``n \\ge 3``), without its keyword and closing stop; "" where it states none."""
    depth = 0
    for match in _TOKEN.finditer(latex):
        found = _STATED.match(latex, match.start()) if depth == 0 else None
        if found is not None:
            return _trimmed(latex[found.end() :].strip().rstrip(".,;"))
        depth += {"{": 1, "}": -1, "(": 1, ")": -1, "\\left": 1, "\\right": -1}.get(match.group(), 0)
    return ""


def is_condition(part: str) -> bool:
    """Whether a segment of a row only bounds a parameter (``n \\ge 3``): a condition on the row."""
    return _PARAMETER.fullmatch(_trimmed(part).rstrip(".,;")) is not None


def _trimmed(part: str) -> str:
    """``part`` without the spacing commands (``\\ ``, ``\\,``) around it."""
    return re.sub(r"^(?:\s|\\[ ,;:!])+|(?:\s|\\[ ,;:!])+$", "", part)


def _tail(latex: str) -> str:
    """``latex`` without what follows the relation: a condition after ``\\quad``, ``\\text``, a
    comma at depth 0, and the closing full stop."""
    cut = re.split(r"\\q?quad|\\text\{\s*(?:for|where|if|as|when)|\\forall|\\text\{\s*,", latex, maxsplit=1)[0]
    depth, end = 0, len(cut)
    for match in _TOKEN.finditer(cut):
        token = match.group()
        depth += {"{": 1, "}": -1, "(": 1, ")": -1, "\\left": 1, "\\right": -1}.get(token, 0)
        if depth == 0 and token == ",":
            end = match.start()
            break
    return cut[:end].rstrip().rstrip(".,;").rstrip()


def _group(items: list[str], index: int) -> tuple[list[str], int]:
    """The tokens of the argument at ``index`` (a braced group or one token), and the index after it."""
    if index >= len(items):
        return [], index
    if items[index] != "{":
        if items[index] in _WITH_ARGUMENT and items[index + 1 : index + 2] == ["{"]:  # _\mathcal{B}: one argument
            inner, end = _group(items, index + 1)
            return [items[index], "{", *inner, "}"], end
        return [items[index]], index + 1
    depth = 0
    for end in range(index, len(items)):
        depth += {"{": 1, "}": -1}.get(items[end], 0)
        if depth == 0:
            return items[index + 1 : end], end + 1
    return items[index + 1 :], len(items)


def _bracket(items: list[str], index: int) -> tuple[list[str], int] | None:
    """The tokens inside a bracket ``[..]``, ``(..)`` or ``\\left[..\\right]`` at ``index``."""
    if index < len(items) and items[index] == "\\left":
        index += 1
    if index >= len(items) or items[index] not in ("[", "("):
        return None
    depth = 0
    for end in range(index, len(items)):
        depth += 1 if items[end] in ("[", "(") else -1 if items[end] in ("]", ")") else 0
        if depth == 0:
            inner = items[index + 1 : end]
            if inner and inner[-1] == "\\right":
                inner = inner[:-1]
            return inner, end + 1
    return None


# The argument at an index (a braced group, one token, or a command with its braced argument).
argument = _group


def _flat(items: list[str]) -> str:
    return "".join(items)


_HATS = ("\\hat", "\\widehat", "\\tilde")
_BOLD = ("\\mathbf", "\\boldsymbol", "\\bm", "\\vec", "\\mathbold")
_WORDS = ("\\mathrm", "\\operatorname", "\\text", "\\mathit", "\\textrm")
# Commands that take their braced argument with them where they are an argument themselves (x_\mathcal{B}).
_WITH_ARGUMENT = {*_WORDS, *_BOLD, "\\mathcal", "\\mathbb", "\\mathscr", "\\mathfrak"}
_OUTPUT = {"y", "\\hat{x}", "yhat", "z"}
# The numerators of a derivative with respect to x that are the layer's output: its Jacobian.
_DIFFERENTIATED = {"y", "\\hat{x}", "\\hatx", "\\widehat{x}", "\\tilde{x}", "\\hat{y}", "z"}
# The subscripts a paper puts on its mean and spread to name the group they are over (a batch, a
# group, the group of entry i); any other (\\sigma_\\epsilon, \\mu_1) is a symbol of its own.
GROUPS = {"B", "\\mathcal{B}", "\\mathcalB", "g", "G", "i", "\\mathrm{LN}", "\\mathrm{GN}", "\\mathrm{BN}"}
# Single letters the claim language (or a fitted claim) reads; any other is the paper's own symbol.
LETTERS = set("xyJIgvctndabqrskw")
# Operators a paper applies without parentheses: \\det J, \\mathrm{tr}\\, J.
APPLIED = {"\\det": "det", "\\tr": "trace"}


def canonical(latex: str, notation: Notation) -> str:
    """The LaTeX the claim grammar reads, for one side of a relation in the paper's notation."""
    out = _rewritten(_replace_overrides(tokens(latex), notation), notation)
    text = re.sub(r"\\(left|right)\s+(?=\\[|lrvV]|[()|.])", r"\\\1", " ".join(out))
    return re.sub(r"\\(?:left|right)(?=\\[lr]?[vV]ert)", "", text)


def _rewritten(items: list[str], notation: Notation) -> list[str]:
    """``items`` (after the overrides) rewritten into the tokens the claim grammar reads."""
    out: list[str] = []
    index = 0
    while index < len(items):
        token = items[index]
        index, written = _rewrite(items, index, notation)
        if written is None:
            if token not in DROPPED:
                out.append(token)
            index += 1
        else:
            out.extend(written)
    return out


def _unbold(items: list[str]) -> list[str]:
    """A bold letter as the letter (``\\bar{\\mathbf{a}}`` is ``\\bar{a}``), but for the identity I."""
    out: list[str] = []
    index = 0
    while index < len(items):
        window = items[index : index + 4]
        if (
            len(window) == 4
            and window[0] in _BOLD
            and window[1] == "{"
            and window[3] == "}"
            and re.fullmatch(r"[A-HJ-Za-z]", window[2])
        ):
            out.append(window[2])
            index += 4
        else:
            out.append(items[index])
            index += 1
    return out


def _replace_overrides(items: list[str], notation: Notation) -> list[str]:
    """The paper's own spellings (--notation, the source's comments) replaced by the symbol's."""
    items = _unbold(items)
    for written, symbol in sorted(notation.overrides.items(), key=lambda pair: -len(pair[0])):
        pattern = written.split()
        width = len(pattern)
        index, out = 0, []
        while index < len(items):
            if items[index] in _WORDS:  # a word's letters are not symbols: \mathrm{LN} keeps its N
                _, end = _group(items, index + 1)
                out.extend(items[index:end])
                index = end
            elif items[index : index + width] == pattern:
                out.extend(_symbol(symbol))
                index += width
            else:
                out.append(items[index])
                index += 1
        items = out
    return items


def _symbol(symbol: str) -> list[str]:
    """A claim symbol as tokens: a Greek one as its letter, whose subscript (gamma_i) reads as on the letter."""
    if symbol in ("gamma", "beta"):
        return ["\\" + symbol]
    return _operator(symbol) if len(symbol) > 1 else [symbol]


def _operator(name: str) -> list[str]:
    return ["\\operatorname", "{", name.replace("_", "\\_"), "}"]


def _rewrite(items: list[str], index: int, notation: Notation) -> tuple[int, list[str] | None]:
    """One rewrite at ``index``: (the index after it, the tokens written), or (index, None)."""
    token = items[index]
    following = items[index + 1] if index + 1 < len(items) else ""
    if token in _HATS:
        inner, end = _group(items, index + 1)
        if _flat([t for t in inner if t not in _BOLD and t not in "{}"]) == "x":
            return _entry(items, end, "y")
    if token in _BOLD:
        inner, end = _group(items, index + 1)
        if _flat(inner) == "1":
            return end, ["\\mathbf", "{", "1", "}"]
        if _flat(inner) == "0":  # the zero vector: a vector == 0 is the zero vector
            return end, ["0"]
        if len(inner) == 1 and re.fullmatch(r"[A-Za-z]", inner[0]):
            return _entry(items, end, inner[0])
    if token == "\\bar" or token == "\\overline":
        inner, end = _group(items, index + 1)
        if _flat(inner) == "x" and (end >= len(items) or items[end] != "_"):  # \bar{x}_i is not the mean
            return end, ["\\mu"]
    if token == "\\frac" and "\\partial" in items[index + 1 : index + 4]:
        return _derivative(items, index)
    if token == "\\nabla":
        return _nabla(items, index)
    if token == "\\mathbb" and following == "{" and items[index + 2 : index + 4] == ["E", "}"]:
        return _expectation(items, index + 4, notation)
    if token == "\\sigma":
        return _sigma(items, index)
    if token == "\\mu" and following == "_":
        sub, end = _group(items, index + 2)  # \mu_B, \mu_g: the mean of a batch or group
        return (end, ["\\mu"]) if _flat(sub) in GROUPS else (index, None)
    if token in _WORDS:
        return _word_rewrite(items, index, notation)
    if token == "\\sum":
        return _sum(items, index, notation)
    if token == "\\langle":
        return _angle(items, index, notation)
    if token in ("\\max", "\\min") and following == "_":
        return _extreme(items, index, notation)
    if token in APPLIED:
        return _applied(items, index + 1, APPLIED[token], notation)
    if token == "^" and following in ("T", "\\intercal", "\\mathsf", "\\mathrm", "\\top", "{"):
        return _transpose(items, index)
    if token in ("[", "]"):
        return index + 1, ["(" if token == "[" else ")"]
    if token == "H" and following != "_" and notation.width_h:
        return index + 1, ["n"]
    if token == "m" and following != "_" and notation.width_m:
        return index + 1, ["n"]
    if re.fullmatch(r"[A-Za-z]", token) and following == "_":
        return _subscript(items, index, token)
    if token in ("\\gamma", "\\beta") and following == "_":
        sub, end = _group(items, index + 2)  # the entry gamma_i of the gain, or gamma_max
        if _flat(sub) in ("\\max", "max") and token == "\\gamma":
            return end, ["\\gamma", "_", "{", "\\max", "}"]
        return (end, [token]) if _flat(sub) in ("i", "j", "k") else (index, None)
    return index, None


def _entry(items: list[str], index: int, letter: str) -> tuple[int, list[str]]:
    """``letter``, or its entry ``letter_i`` where an index subscript follows."""
    if index < len(items) and items[index] == "_":
        sub, end = _group(items, index + 1)
        if _flat(sub) in ("i", "j", "k"):
            return end, _operator(f"{letter}_i")
    return index, [letter]


def _subscript(items: list[str], index: int, letter: str) -> tuple[int, list[str] | None]:
    sub, end = _group(items, index + 2)
    flat = _flat(sub)
    if letter in ENTRIES and flat in ("i", "j", "k"):
        return end, _operator(f"{letter}_i")
    if letter == "b" and flat in ("i", "j", "k"):  # the entry b_i of the bias (Ba et al. 2016)
        return end, ["\\beta"]
    if letter == "J" and flat:  # J_{\mathrm{LN}}, the Jacobian of the layer named
        return end, ["J"]
    if letter == "r" and flat == "k":
        return end, _operator("r_k")
    return index, None  # W_Q, d_k: left for the grammar to refuse, named as foreign


def _derivative(items: list[str], index: int) -> tuple[int, list[str] | None]:
    top, middle = _group(items, index + 1)
    bottom, end = _group(items, middle)
    numerator, denominator = _flat(top).replace("\\partial", ""), _flat(bottom).replace("\\partial", "")
    denominator = re.sub(r"\\(mathbf|boldsymbol|bm)\{(\w)\}", r"\2", denominator)
    if denominator not in ("x", "{x}"):
        if numerator in ("\\mathcal{L}", "L", "\\ell") and denominator in ("y", "\\hat{x}"):
            return end, ["g"]
        if numerator in ("\\mathcal{L}", "L", "\\ell") and denominator in ("x_i", "x_{i}"):
            return end, ["(", "J", "^", "\\top", "g", ")"]  # its entries, read as their vector as x_i is
        return index, None
    if numerator in ("\\mathcal{L}", "L", "\\ell"):
        return end, ["(", "J", "^", "\\top", "g", ")"]
    output = re.sub(r"\\(mathbf|boldsymbol|bm)\{(\w)\}", r"\2", re.sub(r"\\[,;:! ]", "", numerator))
    output = output[1:-1] if output.startswith("{") and output.endswith("}") else output
    if output in _DIFFERENTIATED or re.match(r"\\(?:mathrm|operatorname|text)\{\w+\}", output):
        return end, ["J"]  # of the output, or of the layer it names (`named_jacobian` picks that layer)
    return index, None  # the derivative of something else: left for the grammar to refuse


def named_jacobian(latex: str, notation: Notation) -> str | None:
    """The catalog layer whose Jacobian ``latex`` writes by name (``\\partial \\mathrm{RMSNorm}(x)``,
    ``J_{\\mathrm{LN}}``), or None; a relation naming two is refused (ClaimError)."""
    word = r"\\(?:mathrm|operatorname|text)\{(\w+)\}"
    words = re.findall(rf"\\partial(?:\s|\\[,;:! ])*{word}|J_\{{?{word}", latex)
    keys = {notation.layers.get(first or second) for first, second in words}
    if None in keys:
        unknown = sorted(first or second for first, second in words if (first or second) not in notation.layers)
        raise ClaimError(f"the Jacobian of {', '.join(unknown)}, a layer the paper has not named")
    if len(keys) > 1:
        raise ClaimError(f"the Jacobians of two layers ({', '.join(sorted(k for k in keys if k))}) in one relation")
    return next(iter(keys)) if keys else None


def _nabla(items: list[str], index: int) -> tuple[int, list[str] | None]:
    end = index + 1
    if end < len(items) and items[end] == "_":
        _, end = _group(items, end + 1)
    target, after = _group(items, end)
    if _flat(target) in ("\\mathcal{L}", "L", "\\ell"):  # the loss's gradient: J^T g
        return after, ["(", "J", "^", "\\top", "g", ")"]
    if target[:1] and target[0] in _HATS:  # \nabla_x \hat{x}: the accent with its argument
        accented, _ = _group(items, after)
        target = [*target, "{", *accented, "}"]
    if _flat(_unbold(target)) in _DIFFERENTIATED:
        return index, None  # \nabla_x y: J or J^T, by the paper's layout; left for the grammar to refuse
    return end, ["J"]


def _expectation(items: list[str], index: int, notation: Notation) -> tuple[int, list[str] | None]:
    if index < len(items) and items[index] == "_":
        _, index = _group(items, index + 1)
    found = _bracket(items, index)
    if found is None:
        return index, None
    inner, end = found
    if _flat(inner) in ("x", "x_i", "x_{i}"):
        return end, ["\\mu"]
    return end, [*_operator("mean"), "(", *_rewritten(inner, notation), ")"]


def _extreme(items: list[str], index: int, notation: Notation) -> tuple[int, list[str]]:
    """``\\max_i |y_i|``: the largest entry of the vector the entries make."""
    start = _past_scripts(items, index + 1)
    stop = _summand_end(items, start)
    if items[index] == "\\max" and _flat(items[start:stop]) in _LARGEST_GAIN:  # \max_i |\gamma_i|
        return stop, ["\\gamma", "_", "{", "\\max", "}"]
    return stop, [*_operator(items[index][1:]), "(", *_rewritten(items[start:stop], notation), ")"]


# The largest gain entry in absolute value, as papers write it: the claim language's gamma_max.
_LARGEST_GAIN = {"|\\gamma_i|", "|\\gamma_{i}|", "\\lvert\\gamma_i\\rvert", "\\left|\\gamma_i\\right|"}


def _applied(items: list[str], index: int, name: str, notation: Notation) -> tuple[int, list[str]]:
    """An operator and its argument: ``\\det(J)`` as written, ``\\det J`` with the parentheses added."""
    while index < len(items) and items[index] in DROPPED:
        index += 1
    if index >= len(items) or items[index] in ("(", "\\left", "["):
        return index, _operator(name)
    _, end = _group(items, index)
    if items[index] in ("\\frac", "\\dfrac", "\\tfrac"):  # \det \frac{\partial y}{\partial x}: the fraction whole
        _, end = _group(items, _group(items, end)[1])
    if end < len(items) and items[end] in ("^", "_"):  # J^\top, J_{\mathrm{LN}}
        _, end = _group(items, end + 1)
    return end, [*_operator(name), "(", *_rewritten(items[index:end], notation), ")"]


def _sigma(items: list[str], index: int) -> tuple[int, list[str] | None]:
    end = index + 1
    if end < len(items) and items[end] == "_":
        sub, end = _group(items, end + 1)  # \sigma_B, \sigma_g
        if _flat(sub) not in GROUPS:  # \sigma_u the grammar reads; \sigma_\epsilon is the paper's own
            return index, None
    if items[end : end + 2] == ["^", "2"] or items[end : end + 4] == ["^", "{", "2", "}"]:
        return end + (2 if items[end + 1] == "2" else 4), _operator("q")
    return end, ["\\sqrt", "{", *_operator("q"), "}"]


def _word_rewrite(items: list[str], index: int, notation: Notation) -> tuple[int, list[str] | None]:
    inner, end = _group(items, index + 1)
    word = _flat(inner).replace("\\_", "_")
    if word in notation.layers:
        return end, _operator(notation.layers[word])
    if word in ("Var", "var", "Var}", "RMS"):
        found = _bracket(items, end)
        if found is None or _rewritten(found[0], notation) in (["x"], ["x_i"]):  # of the input: its statistic
            return (found[1] if found else end), (
                _operator("q") if word != "RMS" else ["\\sqrt", "{", *_operator("r"), "}"]
            )
        if word != "RMS":
            raise ClaimError(f"\\mathrm{{{word}}} is read only of the input x, not of {_flat(found[0])}")
        argument = _rewritten(found[0], notation)  # the root mean square of any vector: its norm over sqrt(n)
        return found[1], ["\\frac", "{", "\\|", *argument, "\\|", "}", "{", "\\sqrt", "{", "n", "}", "}"]
    if word in ("tr", "Tr", "trace", "det"):
        return _applied(items, end, "det" if word == "det" else "trace", notation)
    if word == "diag":
        return end, _operator("diag")
    if word in ("mean", "E"):
        found = _bracket(items, end)
        if found is not None:
            return found[1], [*_operator("mean"), "(", *_rewritten(found[0], notation), ")"]
    return index, None


def _sum(items: list[str], index: int, notation: Notation) -> tuple[int, list[str]]:
    """``\\sum`` and its summand, braced: ``\\sum_i a_i b_i`` sums the product, up to the next + or -."""
    end = index + 1
    upper = ""
    while end < len(items) and items[end] in ("_", "^", "\\limits"):
        script, after = _group(items, end + 1) if items[end] != "\\limits" else ([], end + 1)
        if items[end] == "^":
            upper = _flat(script)
        end = after
    stop = _summand_end(items, end)
    summand = _rewritten(items[end:stop], notation)
    if upper == "k":
        return stop, ["\\sum", "{", *_operator("partial"), *summand, "}"]
    return stop, ["\\sum", "{", *summand, "}"]


_BARS = {"|", "\\|", "\\lVert", "\\rVert", "\\lvert", "\\rvert", "\\Vert", "\\vert"}
_ENDS = {"+", "-", ",", "=", "<", ">", "&", "\\quad", "\\qquad", "\\right", *RELATIONS, *UNDECIDED, *DEFINING}


def _summand_end(items: list[str], start: int) -> int:
    """The index after a summand starting at ``start``: the next + or -, relation or closing
    bracket outside the summand's own brackets and bars."""
    depth, bars = 0, 0
    for index in range(start, len(items)):
        token = items[index]
        if token in ("{", "(", "["):
            depth += 1
        elif token in ("}", ")", "]"):
            depth -= 1
            if depth < 0:
                return index
        elif token in _BARS and depth == 0:
            opening = index == start or items[index - 1] in ("+", "-", "\\cdot", "{", "(", "\\left")
            if not opening and bars == 0:
                return index
            bars += 1 if opening else -1
        elif depth == 0 and bars == 0 and token in _ENDS and index > start:
            return index
    return len(items)


def _angle(items: list[str], index: int, notation: Notation) -> tuple[int, list[str] | None]:
    if "\\rangle" not in items[index:]:
        return index, None
    close = items.index("\\rangle", index)
    return close + 1, [*_operator("dot"), "(", *_rewritten(items[index + 1 : close], notation), ")"]


def _transpose(items: list[str], index: int) -> tuple[int, list[str] | None]:
    script, end = _group(items, index + 1)
    flat = _flat(script)
    if flat in ("T", "\\top", "\\intercal", "\\mathsf{T}", "\\mathsf{\\top}", "\\mathrm{T}") or (
        items[index + 1] == "\\mathsf" and _flat(_group(items, index + 2)[0]) in ("T", "\\top")
    ):
        if items[index + 1] == "\\mathsf":
            end = _group(items, index + 2)[1]
        return end, ["^", "\\top"]
    return index, None


# Commands a relation may hold after `canonical`; any other is a symbol outside the vocabulary.
KNOWN = set(claim_latex.KNOWN) | {"partial"}


def foreign(latex: str) -> list[str]:
    """The symbols of canonical LaTeX outside the claim language: unknown commands, words,
    subscripts and letters, and a statistic with a subscript of the paper's own (``\\sigma_\\epsilon``)."""
    found: list[str] = []
    items = tokens(latex)
    index = 0
    while index < len(items):
        index, name = _foreign_at(items, index)
        if name:
            found.append(name)
    return list(dict.fromkeys(found))


def _foreign_at(items: list[str], index: int) -> tuple[int, str]:
    """(the index after the symbol at ``index``, its name if it is outside the claim language, else "")."""
    token = items[index]
    following = items[index + 1] if index + 1 < len(items) else ""
    if token in _WORDS:
        group, end = _group(items, index + 1)
        word = _flat(group).replace("\\_", "_")
        return end, "" if _claim_word(word) else f"{token}{{{word}}}"
    if token in _SCRIPTED:  # \sum_{i=1}^{n}, \lim_{t \to 0}: their scripts name bound letters
        return _past_scripts(items, index + 1), ""
    if token in _SUBSCRIPTED and following == "_":
        group, end = _group(items, index + 2)
        return end, "" if (token, _flat(group)) in _CLAIM_SUBSCRIPTS else f"{token}_{_flat(group)}"
    if token in _ACCENTS:
        group, end = _group(items, index + 1)
        if end < len(items) and items[end] == "_":  # \bar{x}_i: the accented letter's entry
            end = _group(items, end + 1)[1]
        return end, f"{token}{{{_flat(group)}}}"
    if token.startswith("\\") and token[1:].isalpha() and token[1:] not in KNOWN:
        return index + 1, token
    if re.fullmatch(r"[A-Za-z]", token) and following == "_":
        return index + 1, f"{token}_{_flat(_group(items, index + 2)[0])}"
    if re.fullmatch(r"[A-Za-z]", token) and token not in LETTERS and items[index - 1 : index] != ["_"]:
        return index + 1, token
    return index + 1, ""


_ACCENTS = {"\\mathcal", "\\mathbb", "\\bar", "\\overline", "\\tilde", "\\widetilde", "\\hat", "\\widehat", "\\dot"}
_SCRIPTED = {"\\sum", "\\lim", "\\max", "\\min", "\\prod"}
# Greek letters whose subscripts the claim language reads (sigma_u, gamma_max); any other is foreign.
_SUBSCRIPTED = {"\\sigma", "\\mu", "\\gamma", "\\beta", "\\alpha", "\\epsilon", "\\varepsilon"}
_CLAIM_SUBSCRIPTS = {("\\sigma", "u"), ("\\gamma", "\\max"), ("\\gamma", "max")}


def _past_scripts(items: list[str], index: int) -> int:
    while index < len(items) and items[index] in ("_", "^"):
        _, index = _group(items, index + 1)
    return index


def _claim_word(word: str) -> bool:
    from derivations.catalog import LAYERS

    return (
        word in LAYERS
        or word in claim_latex.CALLS
        or word in {"q", "r", "r_k", "partial", "mu", "s"}
        or (word.endswith("_i") and word[:-2] in ENTRIES)
        or (re.fullmatch(r"[a-z_]+", word) is not None and "_" in word)
    )


def read(lhs: str, rhs: str, relation: str, notation: Notation) -> str:
    """The claim (in the claim language, before it is fitted to a layer) that a link states; ClaimError says why not."""
    op = RELATIONS.get(relation, "==" if relation in DEFINING else None)
    if op is None:
        raise ClaimError(f"the relation {relation} is not one the checker decides (==, <=, <, >=, >)")
    left, right = canonical(lhs, notation), canonical(rhs, notation)
    if not left or not right:
        raise ClaimError("a side of the relation is empty")
    symbol = {"==": "=", "<=": "\\le", ">=": "\\ge"}.get(op, op)
    return claim_latex.to_claim(f"{left} {symbol} {right}")


def fit(claim: str, key: str, names: set[str]) -> str:
    """``claim`` fitted to layer ``key``: entries read as vectors, scalars added to vectors as
    multiples of ones, products of matrices and vectors as @, sums of entries as norms and dot
    products, statistics the layer has no symbol for as expressions of x, and a vector
    inequality entrywise.  ``names``: the names the layer's vocabulary has."""
    from derivations.claims.language import parse_expression

    tree = parse_expression(claim, {}, {})
    if not isinstance(tree, ast.Compare) or len(tree.ops) != 1:
        raise ClaimError("a claim is one relation")
    _scalar_shift(tree)
    fitter = _Fitter(key, names)
    left, left_kind = fitter.visit(tree.left)
    right, right_kind = fitter.visit(tree.comparators[0])
    out: ast.expr = ast.Compare(left, tree.ops, [right])
    vector = "v" in (left_kind, right_kind)
    if vector and not isinstance(tree.ops[0], ast.Eq):
        out = ast.Call(ast.Name("all"), [out], [])
    return ast.unparse(out)


def _scalar_shift(tree: ast.expr) -> None:
    """A paper's c (``x + c\\mathbf{1}``) is a scalar, never the claim language's centered input:
    it becomes a free scalar, b or a, whichever the claim does not use."""
    names = [node for node in ast.walk(tree) if isinstance(node, ast.Name)]
    used = {node.id for node in names}
    free = next((name for name in ("b", "a") if name not in used), None)
    if "c" in used and free is not None:
        for node in names:
            if node.id == "c":
                node.id = free


class _Fitter:
    def __init__(self, key: str, names: set[str]) -> None:
        self.key, self.names = key, names

    def visit(self, node: ast.expr) -> tuple[ast.expr, str]:
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Constant):
            return node, "s"
        if isinstance(node, ast.UnaryOp):
            operand, kind = self.visit(node.operand)
            return ast.UnaryOp(node.op, operand), kind
        if isinstance(node, ast.Attribute) and node.attr == "T":
            value, kind = self.visit(node.value)
            return ast.Attribute(value, "T"), {"v": "r", "r": "v"}.get(kind, kind)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self._call(node.func.id, node.args)
        return node, "s"

    def _name(self, name: str) -> tuple[ast.expr, str]:
        if name.endswith("_i") and name[:-2] in ENTRIES:
            base = name[:-2]
            return ast.Name(base), "v" if base in VECTORS else "s"
        if name in STATISTICS and name not in self.names:
            return ast.parse(STATISTICS[name], mode="eval").body, "s"
        if name == "k" and "kappa" in self.names:  # pRMSNorm's k entries: the fraction kappa of n
            return ast.parse("kappa * n", mode="eval").body, "s"
        return ast.Name(name), "v" if name in VECTORS else "m" if name in MATRICES else "s"

    def _binary(self, node: ast.BinOp) -> tuple[ast.expr, str]:
        left, a = self.visit(node.left)
        right, b = self.visit(node.right)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            if a == "v" and b == "s":
                right = ast.BinOp(right, ast.Mult(), ast.Name("ones"))
            elif a == "s" and b == "v":
                left = ast.BinOp(left, ast.Mult(), ast.Name("ones"))
            return ast.BinOp(left, node.op, right), "v" if "v" in (a, b) else a if a != "s" else b
        if isinstance(node.op, ast.Mult):
            if (a, b) in (("m", "v"), ("m", "m"), ("r", "v"), ("r", "m")):
                return ast.BinOp(left, ast.MatMult(), right), {"v": "s" if a == "r" else "v", "m": "m"}[
                    b
                ] if a != "r" or b != "m" else "r"
            if (a, b) == ("v", "r"):
                column = right.value if isinstance(right, ast.Attribute) else ast.Attribute(right, "T")
                return ast.Call(ast.Name("outer"), [left, column], []), "m"
            return ast.BinOp(left, node.op, right), a if a != "s" else b
        if isinstance(node.op, ast.MatMult):
            return ast.BinOp(left, node.op, right), "s" if (a, b) == ("r", "v") else b if a == "m" else a
        return ast.BinOp(left, node.op, right), a

    def _call(self, name: str, arguments: list[ast.expr]) -> tuple[ast.expr, str]:
        from derivations.catalog import LAYERS

        if name == "sum" and len(arguments) == 1 and _partial(arguments[0]):
            if "kappa" not in self.names or ast.unparse(arguments[0]) != "partial * x_i ** 2":
                raise ClaimError("a partial sum the checker reads only as the sum of x_i^2 up to k, of pRMSNorm")
            return ast.parse("kappa * n * r_k", mode="eval").body, "s"
        if name in ("sum", "mean") and len(arguments) == 1:
            return self._reduce(name, arguments[0])
        visited = [self.visit(argument) for argument in arguments]
        nodes = [node for node, _ in visited]
        if name in LAYERS or name == "y":
            if name == self.key and len(nodes) == 1 and ast.unparse(nodes[0]) == "x":
                return ast.Name("y"), "v"
            return ast.Call(ast.Name(name), nodes, []), "v"
        if name == "norm" and len(visited) == 2 and visited[0][1] == "v" and ast.unparse(nodes[1]) == "2":
            nodes = nodes[:1]
        if name in SCALAR_CALLS:
            return ast.Call(ast.Name(name), nodes, []), "s"
        if name in MATRIX_CALLS:
            return ast.Call(ast.Name(name), nodes, []), "m"
        kinds = [kind for _, kind in visited]
        kind = "s" if name in ("max", "min") and len(nodes) == 1 else kinds[0] if kinds else "s"
        return ast.Call(ast.Name(name), nodes, []), kind

    def _reduce(self, name: str, argument: ast.expr) -> tuple[ast.expr, str]:
        """sum or mean over the entries, term by term: a square is a squared norm, a product a
        dot product, a scalar factor or divisor taken out, a scalar summed n times."""
        summed = self._summed(argument)
        if summed is None:
            body, _ = self.visit(argument)
            summed = ast.Call(ast.Name(name), [body], [])
            return summed, "s"
        return (ast.BinOp(summed, ast.Div(), ast.Name("n")) if name == "mean" else summed), "s"

    def _summed(self, node: ast.expr) -> ast.expr | None:
        """The sum over the entries of ``node``, in the claim language, or None where it has no closed form here."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            left, right = self._summed(node.left), self._summed(node.right)
            return None if left is None or right is None else ast.BinOp(left, node.op, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self._summed(node.operand)
            return None if inner is None else ast.UnaryOp(ast.USub(), inner)
        body, kind = self.visit(node)
        if kind == "s":  # a constant over the n entries
            return ast.BinOp(ast.Name("n"), ast.Mult(), body)
        if kind != "v":
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and ast.unparse(node.right) == "2":
            base, _ = self.visit(node.left)
            return ast.BinOp(ast.Call(ast.Name("norm"), [base], []), ast.Pow(), ast.Constant(2))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            (left, a), (right, b) = self.visit(node.left), self.visit(node.right)
            if a == b == "v" and isinstance(node.op, ast.Mult):
                return ast.Call(ast.Name("dot"), [left, right], [])
            if b == "s":  # a scalar factor or divisor
                inner = self._summed(node.left)
                return None if inner is None else ast.BinOp(inner, node.op, right)
            if a == "s" and isinstance(node.op, ast.Mult):
                inner = self._summed(node.right)
                return None if inner is None else ast.BinOp(left, ast.Mult(), inner)
            return None
        return ast.Call(ast.Name("sum"), [body], [])


def _partial(node: ast.expr) -> bool:
    """A partial sum (up to k): of squares, the paper's k r_k, with k the fraction kappa of n."""
    return isinstance(node, ast.BinOp) and "partial" in ast.unparse(node)


def defines_output(link: Link, notation: Notation) -> bool:
    """Whether ``link`` defines the layer's output: ``y = ...``, ``\\hat{x}_i := ...``, ``\\mathrm{LN}(x) = ...``."""
    if link.relation not in ("=", *DEFINING):
        return False
    try:
        lhs = canonical(link.lhs, notation)
    except ClaimError:
        return False
    return (
        lhs in ("y", "\\operatorname { y\\_i }") or re.fullmatch(r"\\operatorname \{ \w+ \} \( x \)", lhs) is not None
    )
