// Typesets the tutorials' maths with MathJax 3 from the site itself, so that it
// renders without a network (site/ opened from disk included).
//
// mkdocs.yml's custom_mathjax_url points the notebooks here. nbconvert's template
// also writes a MathJax 2 configuration (a text/x-mathjax-config script that
// MathJax 3 does not read), so its settings are repeated below. The MathJax files
// (javascripts/mathjax/) are copied from an installed package at build time by
// docs/hooks/mathjax.py.
(function () {
  var here = document.currentScript.src;
  var base = here.substring(0, here.lastIndexOf("/") + 1) + "mathjax";
  window.MathJax = {
    loader: { paths: { mathjax: base } },
    tex: {
      inlineMath: [["$", "$"], ["\\(", "\\)"]],
      displayMath: [["$$", "$$"], ["\\[", "\\]"]],
      processEscapes: true,
      processEnvironments: true,
      tags: "ams",
    },
    svg: { fontCache: "global" },
  };
  var script = document.createElement("script");
  script.src = base + "/tex-svg.js";
  script.async = true;
  document.head.appendChild(script);
})();
