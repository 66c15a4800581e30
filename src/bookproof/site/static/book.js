/* The book's few behaviours in the browser, without any library or network:
   a copy button on every block of code (never on what a program printed),
   printed output split into lines, so that a wrapped line indents its rest,
   and on the search page, each hit in a chapter also linked to the same place
   in the one-page book. */
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

  // The search page lists each hit once, on its chapter's page (Sphinx indexes
  // the chapters; book.html is written after it). A reader of the one-page
  // book gets the same place there too: in book.html chapter N's ids carry
  // "chN-", and a hit without an anchor opens at the chapter's start.
  function wholeBookLink(hit, book, root) {
    var link = hit.querySelector(":scope > a");
    if (link === null || hit.querySelector("a.whole-book-hit") !== null) {
      return;
    }
    var href = link.getAttribute("href") || "";
    var hash = href.indexOf("#");
    var page = hash < 0 ? href : href.slice(0, hash);
    var anchor = hash < 0 ? "" : href.slice(hash + 1);
    if (!Object.prototype.hasOwnProperty.call(book.chapters, page)) {
      return; // the glossary, an exercise book: not in the one-page book
    }
    var chapter = "ch" + book.chapters[page];
    var there = document.createElement("a");
    there.className = "whole-book-hit";
    there.href = root + book.page + "#" + (anchor ? chapter + "-" + anchor : chapter);
    there.textContent = "in the whole book";
    var note = document.createElement("span");
    note.className = "whole-book-hit";
    note.append(" (", there, ")");
    link.after(note);
  }

  function linkHitsIntoWholeBook() {
    var results = document.getElementById("search-results");
    var book = window.BOOK_WHOLE_BOOK;
    if (results === null || !book) {
      return;
    }
    var root = document.documentElement.dataset.content_root || "";
    function decorate() {
      results.querySelectorAll("ul.search > li").forEach(function (hit) {
        wholeBookLink(hit, book, root);
      });
    }
    // Sphinx adds the hits one by one, after this script has run.
    new MutationObserver(decorate).observe(results, { childList: true, subtree: true });
    decorate();
  }

  function start() {
    document.querySelectorAll("article div.highlight").forEach(function (highlight) {
      if (highlight.closest(NOT_CODE) === null) {
        addButton(highlight);
      }
    });
    document.querySelectorAll("article .listing-output div.highlight pre").forEach(splitLines);
    linkHitsIntoWholeBook();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
