// noetl console: show times in the visitor's time zone, and follow a
// running execution (and refresh the executions list while some run). Every page works without this script: it only
// re-fetches the page it is on and swaps the regions marked data-live, as
// long as one of them carries data-follow (the server drops it once the
// execution has ended). A region holding the keyboard focus is left
// alone, so typing in a form is never interrupted.
(function () {
  'use strict';
  var timer = null;

  function delay() {
    var ms = 0;
    document.querySelectorAll('[data-live][data-follow]').forEach(function (el) {
      var v = parseInt(el.getAttribute('data-follow'), 10) || 2000;
      ms = ms === 0 ? v : Math.min(ms, v);
    });
    return ms;
  }

  function schedule(ms) {
    if (timer) { clearTimeout(timer); }
    timer = ms > 0 ? setTimeout(refresh, ms) : null;
  }

  function swap(doc) {
    document.querySelectorAll('[data-live]').forEach(function (el) {
      var fresh = doc.getElementById(el.id);
      if (!fresh) { return; }
      var active = document.activeElement;
      if (active && active !== document.body && el.contains(active)) { return; }
      var open = [];
      el.querySelectorAll('details').forEach(function (d) { open.push(d.open); });
      var node = document.importNode(fresh, true);
      node.querySelectorAll('details').forEach(function (d, i) {
        if (i < open.length) { d.open = open[i]; }
      });
      el.replaceWith(node);
    });
    document.title = doc.title;
  }

  function refresh() {
    timer = null;
    fetch(window.location.href, { credentials: 'same-origin', cache: 'no-store' })
      .then(function (r) {
        if (!r.ok) { throw new Error('HTTP ' + r.status); }
        return r.text();
      })
      .then(function (html) {
        swap(new DOMParser().parseFromString(html, 'text/html'));
        localize(document);
        document.documentElement.setAttribute('data-refreshed', String(Date.now()));
        schedule(delay());
      })
      .catch(function () { schedule(5000); });
  }

  // Times: the server writes UTC; shown here in the visitor's time zone
  // (the UTC text stays in the title).
  function pad(n, w) { n = String(n); while (n.length < (w || 2)) { n = '0' + n; } return n; }
  function localize(root) {
    root.querySelectorAll('time[datetime]:not([data-local])').forEach(function (el) {
      var d = new Date(el.getAttribute('datetime'));
      if (isNaN(d.getTime())) { return; }
      var hms = pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
      el.title = el.textContent + ' (UTC)';
      el.textContent = el.getAttribute('data-fmt') === 't' ? hms + '.' + pad(d.getMilliseconds(), 3)
        : d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + hms;
      el.setAttribute('data-local', '');
    });
    root.querySelectorAll('[data-tz-label]').forEach(function (el) { el.textContent = 'Time (local)'; });
    // Filters typed in local time: the form says which zone.
    root.querySelectorAll('input[data-tz]').forEach(function (el) { el.value = String(new Date().getTimezoneOffset()); });
  }

  document.addEventListener('DOMContentLoaded', function () {
    localize(document);
    document.documentElement.setAttribute('data-localized', '');
    schedule(delay());
  });
})();
