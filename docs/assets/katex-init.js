// Typesets every formula pymdownx.arithmatex marked (generic mode: \( \) inline, \[ \] display)
// with the vendored KaTeX. Material's instant navigation swaps pages without a reload, so it
// runs on each page it shows (document$), and on the first load where that is absent.
(function () {
  "use strict";

  function typeset() {
    var blocks = document.querySelectorAll(".arithmatex");
    for (var i = 0; i < blocks.length; i++) {
      renderMathInElement(blocks[i], {
        delimiters: [
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true },
        ],
        // A formula KaTeX cannot parse stays as raw TeX and is logged with console.error:
        // the browser check (tests/docs_browser.py) fails on either.
      });
    }
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(typeset);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", typeset);
  } else {
    typeset();
  }
})();
