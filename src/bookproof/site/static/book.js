/* The book's few behaviours in the browser, without any library or network:
   a copy button on every block of code (never on what a program printed), and
   printed output split into lines, so that a wrapped line indents its rest. */
"use strict";

(function () {
  // Blocks whose text is for reading, not for typing: outputs, plain text.
  var NOT_CODE = ".listing-output, .highlight-none, .highlight-text";

  // The code exactly as the chapter shows it. Pygments ends every block with a
  // newline the fence does not have; a pasted trailing newline would also run
  // a shell command before the reader meant to.
  function codeOf(pre) {
    return pre.textContent.replace(/\n$/, "");
  }

  function fallbackCopy(text) {
    // Where the Clipboard API is missing (a page opened in an old browser or
    // from a context it does not trust), a selected hidden field can be copied.
    var field = document.createElement("textarea");
    field.value = text;
    field.setAttribute("readonly", "");
    field.style.position = "fixed";
    field.style.opacity = "0";
    document.body.appendChild(field);
    field.select();
    var copied = false;
    try {
      copied = document.execCommand("copy");
    } catch (error) {
      copied = false;
    }
    document.body.removeChild(field);
    return copied ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return fallbackCopy(text);
      });
    }
    return fallbackCopy(text);
  }

  function say(button, words, className) {
    button.textContent = words;
    button.classList.toggle("copied", className === "copied");
    window.setTimeout(function () {
      button.textContent = "Copy";
      button.classList.remove("copied");
    }, 2000);
  }

  function addButton(highlight) {
    var pre = highlight.querySelector("pre");
    if (pre === null) {
      return;
    }
    var wrapper = highlight.closest(".literal-block-wrapper");
    var number = wrapper && wrapper.querySelector(".listing-number");
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy-code";
    button.textContent = "Copy";
    button.setAttribute(
      "aria-label",
      number ? "Copy the code of " + number.textContent : "Copy this code"
    );
    button.addEventListener("click", function () {
      copy(codeOf(pre)).then(
        function () {
          say(button, "Copied", "copied");
        },
        function () {
          say(button, "Press Ctrl+C", "failed");
          window.getSelection().selectAllChildren(pre);
        }
      );
    });
    highlight.appendChild(button);
  }

  function splitLines(pre) {
    // One block per printed line; the text itself is unchanged.
    var lines = pre.textContent.replace(/\n$/, "").split("\n");
    pre.textContent = "";
    lines.forEach(function (line) {
      var span = document.createElement("span");
      span.className = "output-line";
      span.textContent = line; // book.css gives an empty line its height
      pre.appendChild(span);
    });
  }

  function start() {
    document.querySelectorAll("article div.highlight").forEach(function (highlight) {
      if (highlight.closest(NOT_CODE) === null) {
        addButton(highlight);
      }
    });
    document.querySelectorAll("article .listing-output div.highlight pre").forEach(splitLines);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
