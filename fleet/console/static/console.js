// trit-fleet web console: the copy buttons. A button
// <button type="button" data-copy="TEXT"> puts TEXT on the clipboard. One
// listener on the document, so the buttons of refreshed live regions work
// too. Without the Clipboard API (a page not served from 127.0.0.1 or over
// TLS), the text beside the button is selected for Ctrl+C instead.
"use strict";
document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-copy]");
  if (!b) return;
  const label = b.textContent;
  const say = (text) => {
    b.textContent = text;
    setTimeout(() => { b.textContent = label; }, 2000);
  };
  const select = () => {
    const shown = b.parentElement && b.parentElement.querySelector("code");
    if (shown) window.getSelection().selectAllChildren(shown);
    say("Press Ctrl+C");
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(b.dataset.copy).then(() => say("Copied"), select);
  } else {
    select();
  }
});
