// Navigation inside the page: the address bar holds a shareable URL and
// the view follows it.

let show = () => {};

/** Sets what shows the view of the current URL (main.js's route). */
export function onRoute(fn) {
  show = fn;
}

/** Shows the view of the current URL. */
export function route() {
  show();
}

/** Navigates to url inside the page. */
export function go(url) {
  history.pushState(null, '', url);
  route();
}

/** The URL of the player page of a name (player.js). */
export function playerHref(name) {
  return `/?player=${encodeURIComponent(name)}`;
}

// Same-origin links navigate inside the page (the address bar still
// shows a shareable URL).
document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[data-nav]');
  if (!a || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  go(a.getAttribute('href'));
});
