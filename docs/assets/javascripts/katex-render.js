// Render the math that pymdownx.arithmatex (generic mode) marks: <span class="arithmatex">\(…\)</span>
// inline and <div class="arithmatex">\[…\]</div> display, on every page and in the API reference.
// Only marked elements are touched, so a "$" in prose or code is never taken for math.
// `document$` is Material's page-change stream (instant navigation re-renders each new page).
function renderArithmatex(root) {
  for (const el of root.querySelectorAll(".arithmatex")) {
    if (el.dataset.rendered) continue;
    const text = el.textContent.trim();
    const display = text.startsWith("\\[") || text.startsWith("$$");
    const tex = text.replace(/^(\\\(|\\\[|\$\$?)/, "").replace(/(\\\)|\\\]|\$\$?)$/, "");
    // throwOnError: false shows a bad formula in red (.katex-error) instead of hiding the page;
    // the screenshot test fails on any .katex-error.
    katex.render(tex, el, { displayMode: display, throwOnError: false });
    el.dataset.rendered = "1";
  }
}
if (typeof document$ !== "undefined") {
  document$.subscribe(({ body }) => renderArithmatex(body));
} else {
  document.addEventListener("DOMContentLoaded", () => renderArithmatex(document.body));
}
