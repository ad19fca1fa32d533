(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll("#q-table tbody tr"));
  var texts = rows.map(function (tr) { return tr.textContent.toLowerCase(); });
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-key]"));
  var search = document.getElementById("q-search");
  var size = document.getElementById("q-size");
  var prev = document.getElementById("q-prev");
  var next = document.getElementById("q-next");
  var counter = document.getElementById("q-count");
  var where = document.getElementById("q-page");
  var matching = [];
  var page = 0;
  function show() {
    var per = size.value === "all" ? Math.max(matching.length, 1) : parseInt(size.value, 10);
    var pages = Math.max(1, Math.ceil(matching.length / per));
    page = Math.min(Math.max(page, 0), pages - 1);
    var first = page * per;
    var last = Math.min(first + per, matching.length);
    rows.forEach(function (tr) { tr.hidden = true; });
    for (var i = first; i < last; i += 1) { matching[i].hidden = false; }
    counter.textContent = matching.length + " of " + rows.length + " match";
    where.textContent = matching.length === 0 ? "no rows" :
      "rows " + (first + 1) + "\u2013" + last + ", page " + (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  function filter() {
    var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    matching = rows.filter(function (tr, i) {
      return selects.every(function (s) {
        return s.value === "" || tr.getAttribute("data-" + s.dataset.key) === s.value;
      }) && words.every(function (w) { return texts[i].indexOf(w) !== -1; });
    });
    page = 0;
    show();
  }
  selects.forEach(function (s) { s.addEventListener("change", filter); });
  search.addEventListener("input", filter);
  size.addEventListener("change", function () { page = 0; show(); });
  prev.addEventListener("click", function () { page -= 1; show(); });
  next.addEventListener("click", function () { page += 1; show(); });
  filter();
})();
