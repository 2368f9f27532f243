// Thematic map: themes, sub-themes and codes as a cytoscape graph; node size = excerpts.
// PNG comes from cytoscape's renderer; SVG is written here from the laid-out positions.
(function () {
  "use strict";

  var container = document.getElementById("cy");
  if (!container || !window.cytoscape) { return; }

  var BORDER = { candidate: "dashed", reviewed: "dotted", defined: "solid", final: "double" };
  var cy = null;

  function radius(node) {
    var kind = node.data("kind"), size = node.data("size") || 0;
    var base = kind === "theme" ? 34 : kind === "subtheme" ? 24 : 9;
    return base + Math.min(40, Math.sqrt(size) * (kind === "code" ? 2 : 4));
  }

  function start(data) {
    // Size is also written out: "Name (12)" = excerpts under the theme, coded segments for a code.
    data.nodes.forEach(function (n) { n.data.label = n.data.label + " (" + (n.data.size || 0) + ")"; });
    if (!data.nodes.length) { document.getElementById("map-empty").hidden = false; }
    cy = window.cytoscape({
      container: container,
      elements: data.nodes.concat(data.edges),
      style: [
        { selector: "node", style: {
          "label": "data(label)", "width": function (n) { return 2 * radius(n); }, "height": function (n) { return 2 * radius(n); },
          "background-color": "data(colour)", "font-size": 11, "text-wrap": "wrap", "text-max-width": 120,
          "text-valign": "bottom", "text-margin-y": 4, "color": "#1f2933",
          "text-background-color": "#ffffff", "text-background-opacity": 0.8, "text-background-padding": 2 } },
        { selector: "node[kind = 'theme'], node[kind = 'subtheme']", style: {
          "shape": "round-rectangle", "font-size": 14, "font-weight": "bold", "border-width": 3, "border-color": "#1f2933",
          "border-style": function (n) { return BORDER[n.data("status")] || "solid"; }, "background-opacity": 0.85 } },
        { selector: "node[kind = 'subtheme']", style: { "font-size": 12 } },
        { selector: "edge", style: { "width": 1.5, "line-color": "#9aa5b1", "curve-style": "bezier" } },
        { selector: "edge[kind = 'subtheme']", style: { "width": 3, "line-color": "#52606d", "target-arrow-shape": "triangle", "target-arrow-color": "#52606d" } }
      ],
      // Labels count as part of each node's size, so the layout keeps them apart as well as the nodes.
      layout: { name: "cose", animate: false, nodeDimensionsIncludeLabels: true, nodeRepulsion: function () { return 9000; },
                idealEdgeLength: function () { return 90; }, randomize: false }
    });
    cy.on("tap", "node[uuid]", function (event) {
      window.location.assign(container.getAttribute("data-theme-url") + event.target.data("uuid") + "/");
    });
    container.setAttribute("data-ready", "1");
  }

  function download(href, name) {
    var link = document.createElement("a");
    link.href = href;
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  function filename(ext) {
    return (container.getAttribute("data-project") || "thematic-map").replace(/[^\w-]+/g, "-").toLowerCase() + "-thematic-map." + ext;
  }

  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function toSvg() {
    var box = cy.elements().boundingBox({ includeLabels: true });
    var pad = 20, w = Math.ceil(box.w + 2 * pad), h = Math.ceil(box.h + 2 * pad);
    var dx = pad - box.x1, dy = pad - box.y1;
    var out = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + " " + h + '" font-family="system-ui, sans-serif">',
      '<rect width="100%" height="100%" fill="#ffffff"/>'];
    cy.edges().forEach(function (e) {
      var s = e.source().position(), t = e.target().position();
      out.push('<line x1="' + (s.x + dx) + '" y1="' + (s.y + dy) + '" x2="' + (t.x + dx) + '" y2="' + (t.y + dy) + '" stroke="' +
        (e.data("kind") === "subtheme" ? "#52606d" : "#9aa5b1") + '" stroke-width="' + (e.data("kind") === "subtheme" ? 3 : 1.5) + '"/>');
    });
    cy.nodes().forEach(function (n) {
      var p = n.position(), r = radius(n), x = p.x + dx, y = p.y + dy, kind = n.data("kind");
      var dash = { candidate: ' stroke-dasharray="8 4"', reviewed: ' stroke-dasharray="2 3"' }[n.data("status")] || "";
      if (kind === "code") {
        out.push('<circle cx="' + x + '" cy="' + y + '" r="' + r + '" fill="' + esc(n.data("colour")) + '"/>');
      } else {
        out.push('<rect class="theme" x="' + (x - r) + '" y="' + (y - r) + '" width="' + 2 * r + '" height="' + 2 * r + '" rx="8" fill="' +
          esc(n.data("colour")) + '" fill-opacity="0.85" stroke="#1f2933" stroke-width="3"' + dash + '/>');
      }
      out.push('<text x="' + x + '" y="' + (y + r + 14) + '" text-anchor="middle" font-size="' + (kind === "code" ? 11 : 14) + '"' +
        (kind === "code" ? "" : ' font-weight="bold"') + ' fill="#1f2933">' + esc(n.data("label")) + "</text>");
    });
    out.push("</svg>");
    return out.join("\n");
  }

  document.getElementById("map-png").addEventListener("click", function () {
    if (cy) { download(cy.png({ full: true, scale: 2, bg: "#ffffff" }), filename("png")); }
  });
  document.getElementById("map-svg").addEventListener("click", function () {
    if (!cy) { return; }
    var url = URL.createObjectURL(new Blob([toSvg()], { type: "image/svg+xml" }));
    download(url, filename("svg"));
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  });
  document.getElementById("map-fit").addEventListener("click", function () { if (cy) { cy.fit(undefined, 30); } });

  fetch(container.getAttribute("data-url"), { credentials: "same-origin" })
    .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
    .then(start)
    .catch(function () { window.RTA.flash("The thematic map could not be loaded.", "error"); });
})();
