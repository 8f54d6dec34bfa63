// Light/dark theme for both pages: the saved choice, else the system's; a button toggles it.
const KEY = 'wgc-theme';

export function initTheme(button) {
  const saved = localStorage.getItem(KEY);
  const dark = saved ? saved === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  apply(dark ? 'dark' : 'light', button);
  button.addEventListener('click', () => {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem(KEY, next);
    apply(next, button);
  });
}

function apply(theme, button) {
  document.documentElement.dataset.theme = theme;
  button.textContent = theme === 'dark' ? 'Light theme' : 'Dark theme';
}
