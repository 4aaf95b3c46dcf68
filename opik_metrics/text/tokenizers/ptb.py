"""The tokenisation pycocoevalcap applies before BLEU/ROUGE-L/CIDEr, in pure Python: Stanford
CoreNLP 3.4.1's ``PTBTokenizer -preserveLines -lowerCase`` on each caption, then its punctuation removal.

Charset: PTBTokenizer's command line reads the file and writes its output as UTF-8 whatever the
locale or ``file.encoding`` (its ``-encoding`` option defaults to utf-8), and pycocoevalcap writes and
decodes UTF-8, so captions are read here as the Unicode text they are.
"""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from functools import lru_cache
from typing import Callable, Iterable, Optional

# Why not call the jar: no Java to install or JVM to start, the same tokens, and faster (docs/speed.md).
# The rules below are those of CoreNLP 3.4.1's PTBLexer (a JFlex scanner: at each position the
# longest match over all rules wins, trailing context included, ties to the earlier rule), with the
# options the command line uses (PTB3 escaping, tokenizeNLs, no americanize), checked against the jar.

__all__ = ["ptb_tokenize", "ptb_tokenize_all", "PUNCTUATIONS"]

# pycocoevalcap's list, compared after lower-casing: "-LRB-" never matches, so "(" stays as "-lrb-".
PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                          ".", "?", "!", ",", ":", "-", "--", "...", ";"])

# The lexer's [:letter:] and [:digit:] above U+007F: Unicode 6.2 (Java 7), BMP only. JFlex baked
# these into PTBLexer; characters outside the BMP reach it as two surrogates, which nothing matches.
_LETTER_RANGES = """
00AA 00B5 00BA 00C0-00D6 00D8-00F6 00F8-02C1 02C6-02D1 02E0-02E4 02EC 02EE 0370-0374 0376-0377
037A-037D 0386 0388-038A 038C 038E-03A1 03A3-03F5 03F7-0481 048A-0527 0531-0556 0559 0561-0587
05D0-05EA 05F0-05F2 0620-064A 066E-066F 0671-06D3 06D5 06E5-06E6 06EE-06EF 06FA-06FC 06FF 0710
0712-072F 074D-07A5 07B1 07CA-07EA 07F4-07F5 07FA 0800-0815 081A 0824 0828 0840-0858 08A0
08A2-08AC 0904-0939 093D 0950 0958-0961 0971-0977 0979-097F 0985-098C 098F-0990 0993-09A8
09AA-09B0 09B2 09B6-09B9 09BD 09CE 09DC-09DD 09DF-09E1 09F0-09F1 0A05-0A0A 0A0F-0A10 0A13-0A28
0A2A-0A30 0A32-0A33 0A35-0A36 0A38-0A39 0A59-0A5C 0A5E 0A72-0A74 0A85-0A8D 0A8F-0A91 0A93-0AA8
0AAA-0AB0 0AB2-0AB3 0AB5-0AB9 0ABD 0AD0 0AE0-0AE1 0B05-0B0C 0B0F-0B10 0B13-0B28 0B2A-0B30
0B32-0B33 0B35-0B39 0B3D 0B5C-0B5D 0B5F-0B61 0B71 0B83 0B85-0B8A 0B8E-0B90 0B92-0B95 0B99-0B9A
0B9C 0B9E-0B9F 0BA3-0BA4 0BA8-0BAA 0BAE-0BB9 0BD0 0C05-0C0C 0C0E-0C10 0C12-0C28 0C2A-0C33
0C35-0C39 0C3D 0C58-0C59 0C60-0C61 0C85-0C8C 0C8E-0C90 0C92-0CA8 0CAA-0CB3 0CB5-0CB9 0CBD 0CDE
0CE0-0CE1 0CF1-0CF2 0D05-0D0C 0D0E-0D10 0D12-0D3A 0D3D 0D4E 0D60-0D61 0D7A-0D7F 0D85-0D96
0D9A-0DB1 0DB3-0DBB 0DBD 0DC0-0DC6 0E01-0E30 0E32-0E33 0E40-0E46 0E81-0E82 0E84 0E87-0E88 0E8A
0E8D 0E94-0E97 0E99-0E9F 0EA1-0EA3 0EA5 0EA7 0EAA-0EAB 0EAD-0EB0 0EB2-0EB3 0EBD 0EC0-0EC4 0EC6
0EDC-0EDF 0F00 0F40-0F47 0F49-0F6C 0F88-0F8C 1000-102A 103F 1050-1055 105A-105D 1061 1065-1066
106E-1070 1075-1081 108E 10A0-10C5 10C7 10CD 10D0-10FA 10FC-1248 124A-124D 1250-1256 1258
125A-125D 1260-1288 128A-128D 1290-12B0 12B2-12B5 12B8-12BE 12C0 12C2-12C5 12C8-12D6 12D8-1310
1312-1315 1318-135A 1380-138F 13A0-13F4 1401-166C 166F-167F 1681-169A 16A0-16EA 1700-170C
170E-1711 1720-1731 1740-1751 1760-176C 176E-1770 1780-17B3 17D7 17DC 1820-1877 1880-18A8 18AA
18B0-18F5 1900-191C 1950-196D 1970-1974 1980-19AB 19C1-19C7 1A00-1A16 1A20-1A54 1AA7 1B05-1B33
1B45-1B4B 1B83-1BA0 1BAE-1BAF 1BBA-1BE5 1C00-1C23 1C4D-1C4F 1C5A-1C7D 1CE9-1CEC 1CEE-1CF1
1CF5-1CF6 1D00-1DBF 1E00-1F15 1F18-1F1D 1F20-1F45 1F48-1F4D 1F50-1F57 1F59 1F5B 1F5D 1F5F-1F7D
1F80-1FB4 1FB6-1FBC 1FBE 1FC2-1FC4 1FC6-1FCC 1FD0-1FD3 1FD6-1FDB 1FE0-1FEC 1FF2-1FF4 1FF6-1FFC
2071 207F 2090-209C 2102 2107 210A-2113 2115 2119-211D 2124 2126 2128 212A-212D 212F-2139
213C-213F 2145-2149 214E 2183-2184 2C00-2C2E 2C30-2C5E 2C60-2CE4 2CEB-2CEE 2CF2-2CF3 2D00-2D25
2D27 2D2D 2D30-2D67 2D6F 2D80-2D96 2DA0-2DA6 2DA8-2DAE 2DB0-2DB6 2DB8-2DBE 2DC0-2DC6 2DC8-2DCE
2DD0-2DD6 2DD8-2DDE 2E2F 3005-3006 3031-3035 303B-303C 3041-3096 309D-309F 30A1-30FA 30FC-30FF
3105-312D 3131-318E 31A0-31BA 31F0-31FF 3400-4DB5 4E00-9FCC A000-A48C A4D0-A4FD A500-A60C
A610-A61F A62A-A62B A640-A66E A67F-A697 A6A0-A6E5 A717-A71F A722-A788 A78B-A78E A790-A793
A7A0-A7AA A7F8-A801 A803-A805 A807-A80A A80C-A822 A840-A873 A882-A8B3 A8F2-A8F7 A8FB A90A-A925
A930-A946 A960-A97C A984-A9B2 A9CF AA00-AA28 AA40-AA42 AA44-AA4B AA60-AA76 AA7A AA80-AAAF AAB1
AAB5-AAB6 AAB9-AABD AAC0 AAC2 AADB-AADD AAE0-AAEA AAF2-AAF4 AB01-AB06 AB09-AB0E AB11-AB16
AB20-AB26 AB28-AB2E ABC0-ABE2 AC00-D7A3 D7B0-D7C6 D7CB-D7FB F900-FA6D FA70-FAD9 FB00-FB06
FB13-FB17 FB1D FB1F-FB28 FB2A-FB36 FB38-FB3C FB3E FB40-FB41 FB43-FB44 FB46-FBB1 FBD3-FD3D
FD50-FD8F FD92-FDC7 FDF0-FDFB FE70-FE74 FE76-FEFC FF21-FF3A FF41-FF5A FF66-FFBE FFC2-FFC7 FFCA-FFCF
FFD2-FFD7 FFDA-FFDC
"""
_DIGIT_RANGES = """
0660-0669 06F0-06F9 07C0-07C9 0966-096F 09E6-09EF 0A66-0A6F 0AE6-0AEF 0B66-0B6F 0BE6-0BEF
0C66-0C6F 0CE6-0CEF 0D66-0D6F 0E50-0E59 0ED0-0ED9 0F20-0F29 1040-1049 1090-1099 17E0-17E9
1810-1819 1946-194F 19D0-19D9 1A80-1A89 1A90-1A99 1B50-1B59 1BB0-1BB9 1C40-1C49 1C50-1C59
A620-A629 A8D0-A8D9 A900-A909 A9D0-A9D9 AA50-AA59 ABF0-ABF9 FF10-FF19
"""


def _class_body(ranges: str) -> str:
    """'00AA 00C0-00D6' -> a regex class body of \\u escapes."""
    out = []
    for item in ranges.split():
        first, _, last = item.partition("-")
        out.append(f"\\u{first}" + (f"-\\u{last}" if last else ""))
    return "".join(out)


# Case-insensitive letters as JFlex's %caseless has them (i, s and k also match İ ı, ſ and the Kelvin sign).
_CASELESS = {"i": "iIİı", "s": "sSſ", "k": "kKK"}


def _ci(text: str) -> str:
    """A literal matched case-insensitively (only outside character classes, as in JFlex)."""
    out = []
    for ch in text:
        if "a" <= ch.lower() <= "z":
            out.append("[" + _CASELESS.get(ch.lower(), ch.lower() + ch.upper()) + "]")
        else:
            out.append(re.escape(ch))
    return "".join(out)


def _jf(spec: str) -> str:
    """A JFlex alternation of words ('Mr|[M]iss|Drs?|(Ed|Ph)\\.D') as a Python regex, letters caseless."""
    out, i = [], 0
    while i < len(spec):
        ch = spec[i]
        if ch == "[":
            j = spec.index("]", i)
            out.append(spec[i:j + 1])
            i = j + 1
            continue
        if ch == "\\":
            out.append(spec[i:i + 2])
            i += 2
            continue
        out.append("(?:" if ch == "(" else _ci(ch) if ch.isalpha() else ch)
        i += 1
    return "(?:" + "".join(out) + ")"


# ---------------------------------------------------------------- character classes and macros
_L = "A-Za-z" + _class_body(_LETTER_RANGES)          # [:letter:]
_D = "0-9" + _class_body(_DIGIT_RANGES)              # [:digit:]
_LX = (r"\u00AD\u0237-\u024F\u02C2-\u02C5\u02D2-\u02DF\u02E5-\u02FF\u0300-\u036F\u0370-\u037D\u0384\u0385"
       r"\u03CF\u03F6\u03FC-\u03FF\u0483-\u0487\u04CF\u04F6-\u04FF\u0510-\u0525\u055A-\u055F\u0591-\u05BD"
       r"\u05BF\u05C1\u05C2\u05C4\u05C5\u05C7\u0615-\u061A\u063B-\u063F\u064B-\u065E\u0670\u06D6-\u06EF"
       r"\u06FA-\u06FF\u070F\u0711\u0730-\u074F\u0750-\u077F\u07A6-\u07B1\u07CA-\u07F5\u07FA\u0900-\u0903"
       r"\u093C\u093E-\u094E\u0951-\u0955\u0962-\u0963\u0981-\u0983\u09BC-\u09C4\u09C7\u09C8\u09CB-\u09CD"
       r"\u09D7\u09E2\u09E3\u0A01-\u0A03\u0A3C\u0A3E-\u0A4F\u0A81-\u0A83\u0ABC-\u0ACF\u0B82\u0BBE-\u0BC2"
       r"\u0BC6-\u0BC8\u0BCA-\u0BCD\u0C01-\u0C03\u0C3E-\u0C56\u0D3E-\u0D44\u0D46-\u0D48\u0E30-\u0E3A"
       r"\u0E47-\u0E4E\u0EB1-\u0EBC\u0EC8-\u0ECD")     # LETTER's extras: marks and such
_SPLET = "&[aeiouAEIOU](?:" + _ci("acute") + "|" + _ci("grave") + "|" + _ci("uml") + ");"
_LET = f"(?:[{_L}{_LX}]|{_SPLET})"                    # LETTER
_LETDIG = f"(?:[{_L}{_LX}{_D}]|{_SPLET})"
_RL, _RLD = f"[{_L}]", f"[{_L}{_D}]"
_DIG = f"[{_D}]"
_WORD = f"{_LET}{_LETDIG}*(?:[.!?]{_LET}{_LETDIG}*)*"
_SP = r"[ \t\u00A0\u2000-\u200A\u3000]"
_SPNL = r"[ \t\u00A0\u2000-\u200A\u3000\n\r\u2028\u2029\x0B\x0C\x85]"
_APOS = r"(?:['\x92\u2019]|&" + _ci("apos") + ";)"
_APOSETC = r"(?:['\x92\u2019`\x91\u2018\u201B]|&" + _ci("apos") + ";)"
_REDAUX = _APOS + "(?:[msdMSD]|" + _ci("re") + "|" + _ci("ve") + "|" + _ci("ll") + ")"
_SREDAUX = _ci("n") + _APOSETC + _ci("t")
# The lexer's <[!?][A-Za-z\-][^>\r\n]* *>, <NAME( +ATTR)* */? *> and </NAME *>, with the spaces before
# '>' written so that Python's regex does not try every split of a long run of spaces.
_SGML = (r"<(?:[!?][A-Za-z\-][^>\r\n]*>|[A-Za-z][A-Za-z0-9_:.\-]*(?: +(?:[A-Za-z][A-Za-z0-9_:.\-]*|"
         r"[A-Za-z][A-Za-z0-9_:.\-]* *= *(?:'[^']*'|\"[^\"]*\")))* *(?:/ *)?>|/[A-Za-z][A-Za-z0-9_:.\-]* *>)")
_ACRO_SPECIAL = "(?:" + _jf("(Canada|Sino|Korean|EU|Japan|non)-U\\.S") + "|" + _jf("U\\.S\\.-(U\\.K|U\\.S\\.S\\.R)") + ")"
_ACRO = f"(?:{_ACRO_SPECIAL}|[A-Za-z](?:\\.[A-Za-z])*)"
_ACRO2 = f"(?:{_ACRO_SPECIAL}|[A-Za-z](?:\\.[A-Za-z])+)"
_ABBREV1 = _jf(
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Mon|Tue|Tues|Wed|Thu|Thurs|Fri"
    "|Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|[L]a|[M]ass|Md|Mich|Minn"
    "|[M]iss|Mo|Mont|Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|Vt|[W]ash|Wisc?|Wyo"
    "|Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys|tel|est|ext|sq"
    "|Jr|Sr|Bros|(Ed|Ph)\\.D|Blvd|Rd|Esq|etc|al|seq|Bldg") + r"\."
_ABBREV4 = "(?:" + _ACRO + "|" + _jf(
    "Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl|Pvt|Capt"
    "|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens|Insp|Mlle|Mme"
    "|Msgr|Sfc|vs|Alex|Wm|Jos|Cie|a\\.k\\.a|cf|TREAS|Ph|Invt|Elec|Natl|M[ft]g|Dept") + ")"   # ACRO first: longest
_ABBREV3 = _jf("ca|figs?|prop|nos?|art|bldg|prop|pp|op") + r"\."
_PTY = _jf("pt[eyEY]|co") + r"\."
_ACRONYM_NEXT = _jf(
    "[A]bout|[A]ccording|[A]dditionally|[A]fter|[A]n|[A]|[A]s|[A]t|[B]ut|[E]arlier|[H]e|[H]er|[H]ere"
    "|[H]owever|[I]f|[I]n|[I]t|[L]ast|[M]any|[M]ore|[M]r\\.|[M]s\\.|[N]ow|[O]nce|[O]ne|[O]ther|[O]ur|[S]he"
    "|[S]ince|[S]o|[S]ome|[S]uch|[T]hat|[T]he|[T]heir|[T]hen|[T]here|[T]hese|[T]hey|[T]his|[W]e|[W]hen"
    "|[W]hile|[W]hat|[Y]et|[Y]ou")
_FILENAME_EXT = _jf("bat|bmp|c|class|cgi|cpp|dll|doc|docx|exe|gif|gz|h|htm|html|jar|java|jpeg|jpg|mov"
                    "|mp3|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|x|xml|zip")
_HTHING_TAIL = f"(?:-(?:{_ACRO2}\\.|[A-Za-z0-9\\u00AD]+))+"
_HTHING = f"[A-Za-z0-9][A-Za-z0-9.,\\u00AD]*{_HTHING_TAIL}"           # matched as its head, then its tail
_THING_PART = f"(?:[dDoOlL]{_APOSETC}{_RLD})?{_RLD}+"
_THING = f"{_THING_PART}(?:[-_\\u058A\\u2010\\u2011]{_THING_PART})*"
_THINGA = "[A-Z]+(?:(?:[+&]|&" + _ci("amp") + ";)[A-Z]+)+"
_NUMBER = f"[\\-+]?(?:{_DIG}*(?:[.:,\\u00AD\\u066B\\u066C]{_DIG}+)+|{_DIG}+)"
_QUOTES = ("(?:''|[`\\u2018\\u2019\\u201A\\u201B\\u201C\\u201D\\x91\\x92\\x93\\x94\\u201E\\u201F"
           "\\u2039\\u203A\\xAB\\xBB]{1,2}|" + _APOS + ")")
_MISCSYMBOL = (r"[+%&~\^|\\\xA6\xA7\xA8\xA9\xAC\xAE\xAF\xB0-\xB3\xB4-\xBA\xD7\xF7\u0387\u05BE\u05C0\u05C3"
               r"\u05C6\u05F3\u05F4\u0600-\u0603\u0606-\u060A\u060C\u0614\u061B\u061E\u066A\u066D\u0703-\u070D"
               r"\u07F6\u07F7\u07F8\u0964\u0965\u0E4F\u1FBD\u2016\u2017\u2020-\u2023\u2030-\u2038\u203B"
               r"\u203E-\u2042\u2044\u207A-\u207F\u208A-\u208E\u2100-\u214F\u2190-\u21FF\u2200-\u2BFF\u3012"
               r"\u30FB\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65]")
_PHONE = (r"(?:\([0-9]{2,3}\)[ \u00A0]?|(?:\+\+?)?(?:[0-9]{2,4}[\- \u00A0])?[0-9]{2,4}[\- \u00A0])"
          r"[0-9]{3,4}[\- \u00A0]?[0-9]{3,5}|(?:(?:\+\+?)?[0-9]{2,4}\.)?[0-9]{2,4}\.[0-9]{3,4}\.[0-9]{3,5}")
_URL_WWW = _ci("www") + r"\.(?:[^ \t\n\f\r\"<>|.!?(){},]+\.)+[a-zA-Z]{2,4}"
_URL_COM_CHAR = r"[^ \t\n\f\r\"`'<>|.!?(){},-_$]"               # ",-_" is a range, as in JFlex
_URL_TLD = "(?:" + "|".join(_ci(t) for t in ("com", "net", "org", "edu")) + ")"
_URL_COM = f"(?:{_URL_COM_CHAR}+\\.)+{_URL_TLD}"
_URL_PATH = r"/[^ \t\n\f\r\"<>|()]+[^ \t\n\f\r\"<>|.!?(){},-]"
_FULLURL = _ci("http") + _ci("s") + r"?://[^ \t\n\f\r\"<>|(){}]+[^ \t\n\f\r\"<>|.!?(){},-]"
_EMAIL_HEAD = "(?:&" + _ci("lt") + r";|<)?[a-zA-Z0-9]"
_EMAIL_LOCAL_STOP = r"[ \t\n\f\r\"<>|()\u00A0{}]"
_EMAIL_DOMAIN_CHAR = r"[^ \t\n\f\r\"<>|(){}.\u00A0]"
_EMAIL_DOMAIN = f"(?:{_EMAIL_DOMAIN_CHAR}+\\.)*{_EMAIL_DOMAIN_CHAR}+(?:&" + _ci("gt") + ";|>)?"
_EMAIL = _EMAIL_HEAD + "[^" + _EMAIL_LOCAL_STOP[1:] + "*@" + _EMAIL_DOMAIN     # matched in parts (_email)
_ASIANSMILEY = (r"[\^x=~<>]\.\[\^" + _ci("x") + r"=~<>\]|[\-\^x=~<>']_[\-\^x=~<>']"
                r"|\([\-\^x=~<>'][_.]?[\-\^x=~<>']\)|\([\^x=~<>']-[\^x=~<>'`]\)")
_ASCII_LETTER_START = "[A-Za-zİıſK]"    # first characters of caseless ASCII literals

# ---------------------------------------------------------------- token normalisations (PTB3 escaping)
_AMP = re.compile("&" + _ci("amp") + ";")
_LEFT_QUOTES = [(re.compile("&apos;|'"), "`"), (re.compile("\"|&quot;"), "``")]
_RIGHT_QUOTES = [(re.compile("&apos;|'"), "'"), (re.compile("\"|&quot;"), "''")]
_UNICODE_QUOTES = [(re.compile("[\x91\u2018\u201B\u2039]"), "`"), (re.compile("[\x92\u2019\u203A]"), "'"),
                   (re.compile("[\x93\u201C\xAB]"), "``"), (re.compile("[\x94\u201D\xBB]"), "''")]
_FRACTIONS = str.maketrans({"\u00BC": "1/4", "\u00BD": "1/2", "\u00BE": "3/4", "\u2153": "1/3", "\u2154": "2/3"})
_CURRENCY = str.maketrans({"\u00A2": "cents", "\u00A3": "#", "\u0080": "$", "\u00A4": "$", "\u20A0": "$", "\u20AC": "$"})
_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}


@lru_cache(maxsize=1024)
def _quotes(tok: str, left: bool) -> str:
    """latexQuotes: ' and " become ` `` (probably opening) or ' '' and curly quotes become their ASCII forms."""
    for pattern, repl in (_LEFT_QUOTES if left else _RIGHT_QUOTES) + _UNICODE_QUOTES:
        tok = pattern.sub(repl, tok)
    return tok


def _unsoft(tok: str) -> str:
    """Soft hyphens are dropped (a token of soft hyphens only becomes '-')."""
    return (tok.replace("\u00AD", "") or "-") if "\u00AD" in tok else tok


def _parens(tok: str) -> str:
    return tok.replace("(", "-LRB-").replace(")", "-RRB-")


# ---------------------------------------------------------------- rules, in the lexer's priority order
# A rule's matcher returns (end of the whole match with its trailing context, token or None, where the
# next token starts) or None. The longest whole match wins; on a tie the earlier rule.
_Match = Optional[tuple]


def _rule(pattern: str, make: Optional[Callable[[str], str]] = None, back: int = 0) -> Callable[[str, int], _Match]:
    """A rule 'R1/R2' written as '(?P<t>R1)R2' (or plain 'R'); the token is R1, made by ``make``."""
    regex = re.compile(pattern)
    has_t = "(?P<t>" in pattern

    def match(text: str, pos: int) -> _Match:
        m = regex.match(text, pos)
        if m is None:
            return None
        end = m.end("t") if has_t else m.end()
        tok = text[pos:end - back]
        return m.end(), (make(tok) if make else tok), end - back
    return match


def _longest(pattern: str, limit: str, make: Optional[Callable[[str], str]] = None,
             last: Optional[str] = None, needs: str = "") -> Callable[[str, int], _Match]:
    """A rule whose Python match is not always the longest: try ends from far to near (rare tokens
    only), up to where ``limit`` reaches and after a character of ``last`` if given, when the text up
    to there holds ``needs`` (which every match holds)."""
    regex, reach, needed = re.compile(pattern), re.compile(limit), re.compile(needs)

    def match(text: str, pos: int) -> _Match:
        reached = reach.match(text, pos)
        assert reached is not None
        stop = reached.end()
        if not needed.search(text, pos, stop):
            return None
        for end in range(stop, pos, -1):
            if (last is None or text[end - 1] in last) and regex.fullmatch(text, pos, end):
                tok = text[pos:end]
                return end, (make(tok) if make else tok), end
        return None
    return match


def _best_of(*matchers: Callable[[str, int], _Match]) -> Callable[[str, int], _Match]:
    """One rule written as several alternatives: the longest of them."""
    def match(text: str, pos: int) -> _Match:
        best = None
        for matcher in matchers:
            found = matcher(text, pos)
            if found is not None and (best is None or found[0] > best[0]):
                best = found
        return best
    return match


def _longest_of(patterns: list, make: Optional[Callable[[str], str]] = None) -> Callable[[str, int], _Match]:
    """One rule written as several alternatives: the longest of their matches, all found in one pass."""
    regex = re.compile("".join(f"(?:(?=({p}))|)" for p in patterns))
    assert regex.groups == len(patterns)

    def match(text: str, pos: int) -> _Match:
        m = regex.match(text, pos)
        assert m is not None
        end = max(m.regs[1:])[1]     # the spans start at pos, or are (-1, -1)
        if end < 0:
            return None
        tok = text[pos:end]
        return end, (make(tok) if make else tok), end
    return match


# ---------------------------------------------------------------- bounded scanning
# A rule may look far ahead (to the end of a run without spaces) and still give a short token; asked
# again at each of the run's tokens, it would make the tokeniser quadratic in the run's length. What
# such a rule needs to know about the rest of the run is found once per run and kept, below: the
# lexer asks about one text at increasing positions, so the last answer usually still holds. (The jar's
# JFlex lexer scans such runs to their end too, and is itself quadratic on them; its buffer grows, so
# a token of any length comes out whole.)


class _NextFrom:
    """Where the first match of ``pattern`` at or after a position starts (len(text) if none). The
    answer found from ``lo`` holds for every position from ``lo`` up to it, so it is kept."""

    def __init__(self, pattern: str):
        self._search = re.compile(pattern).search
        self._last: tuple = (None, 0, -1)

    def __call__(self, text: str, pos: int) -> int:
        last_text, lo, hi = self._last
        if last_text is text and lo <= pos <= hi:
            return hi
        m = self._search(text, pos)
        hi = m.start() if m else len(text)
        self._last = (text, pos, hi)                           # one tuple: safe to share across threads
        return hi


class _RunEnd:
    """Where the match of ``pattern`` (which may be empty) from a position ends, kept for the positions
    up to there: only for runs that end at the same place from any later position the caller asks."""

    def __init__(self, pattern: str):
        self._match = re.compile(pattern).match
        self._last: tuple = (None, 0, 0)

    def __call__(self, text: str, pos: int) -> int:
        last_text, lo, hi = self._last
        if last_text is text and lo <= pos < hi:
            return hi
        m = self._match(text, pos)
        assert m is not None
        hi = m.end()
        self._last = (text, pos, hi)
        return hi


class _PerText:
    """``make(text)``, kept for the last text asked about."""

    def __init__(self, make: Callable[[str], object]):
        self._make = make
        self._last: tuple = (None, None)

    def __call__(self, text: str):
        last_text, value = self._last
        if last_text is not text:
            value = self._make(text)
            self._last = (text, value)
        return value


def _starts(pattern: str) -> _PerText:
    """The sorted start positions of a (zero-width) pattern's matches in a text, kept per text."""
    regex = re.compile(pattern)
    return _PerText(lambda text: [m.start() for m in regex.finditer(text)])


_NEXT_SPACE = _NextFrom(r"[ \t\n\f\r]")
_SHORT_RUN = 64            # runs up to this long are matched by a rule's own regex


def _guard_before(mark: str, matcher: Callable[[str, int], _Match]) -> Callable[[str, int], _Match]:
    """Skip a costly rule unless ``mark`` occurs before the next space, tab or line break."""
    next_mark = _NextFrom(mark)

    def match(text: str, pos: int) -> _Match:
        return matcher(text, pos) if next_mark(text, pos) < _NEXT_SPACE(text, pos) else None
    return match


def _skip(pattern: str) -> Callable[[str, int], _Match]:
    regex = re.compile(pattern)

    def match(text: str, pos: int) -> _Match:
        m = regex.match(text, pos)
        return (m.end(), None, m.end()) if m else None
    return match


def _acronym(text: str, pos: int) -> _Match:
    """An acronym before a word that usually starts a sentence: 'I.' gives 'I' then '.', 'U.S.' 'U.S.' then '.'.
    ({ACRO}\\./{SPACENL}+({ACRONYM_NEXT}|{SGML}){SPACENL}: the word or the tag, which cannot both match.)"""
    m = _ACRONYM_HEAD.match(text, pos)
    if m is None:
        return None
    after = m.end()
    total = 0
    if text.startswith("<", after):
        tag = _sgml(text, after)
        if tag is not None and _SPNL_RE.match(text, tag[0]):
            total = tag[0] + 1
    else:
        word = _ACRONYM_NEXT_RE.match(text, after)
        if word is not None:
            total = word.end()
    if not total:
        return None
    end = m.end("t")
    if end - pos == 2:
        return total, text[pos], pos + 1
    return total, text[pos:end], end - 1


_ACRONYM_HEAD = re.compile(f"(?P<t>{_ACRO}\\.){_SPNL}+")
_ACRONYM_NEXT_RE = re.compile(f"{_ACRONYM_NEXT}{_SPNL}")
_SGML_RE = re.compile(_SGML)
_SGML_DECLARATION = re.compile(r"<[!?][A-Za-z\-]")
_NEXT_GT_OR_LINE_END = _NextFrom("[>\r\n]")


def _sgml(text: str, pos: int) -> _Match:
    """An SGML tag. Its end is unique: a declaration (<!x, <?x) ends at the first '>' of the line, and
    otherwise the tag's names and quoted values (which may hold '>') leave no choice."""
    if _SGML_DECLARATION.match(text, pos):
        end = _NEXT_GT_OR_LINE_END(text, pos + 3)
        if end >= len(text) or text[end] != ">":
            return None
        end += 1
    else:
        m = _SGML_RE.match(text, pos)
        if m is None:
            return None
        end = m.end()
    return end, text[pos:end].replace(" ", "\u00A0"), end



_ABBREV1_RE = re.compile(_ABBREV1)
_SPNL_RE = re.compile(_SPNL)


def _abbrev1(text: str, pos: int) -> _Match:
    """ABBREV1/{SENTEND}, ABBREV1/[^][^] and ABBREV1: the abbreviation keeps its period (an extra '.' may follow)."""
    m = _ABBREV1_RE.match(text, pos)
    if m is None:
        return None
    end, total = m.end(), m.end()
    if total + 2 <= len(text):
        total += 2
    if _SPNL_RE.match(text, end) and end + 1 < len(text) and text[end + 1] == "<":
        sgml = _sgml(text, end + 1)
        if sgml is not None:
            total = max(total, sgml[0])
    return total, text[pos:end], end


_URL_WWW_RE, _URL_COM_RE, _URL_PATH_RE = re.compile(_URL_WWW), re.compile(_URL_COM), re.compile(_URL_PATH)
# x.com's host: dot-separated runs of _URL_COM_CHAR, the last dot followed by com, net, org or edu.
_URL_COM_RUN = _RunEnd(f"(?:{_URL_COM_CHAR}+\\.)*{_URL_COM_CHAR}*")     # the same from any non-dot inside
_URL_COM_DOTS = _starts(f"(?=\\.{_URL_TLD})")
_URL_MARK = r"(?i:\.(?:com|net|org|edu)|www\.)"


def _url_com_end(text: str, pos: int) -> int:
    """Where the longest x.com host from ``pos`` ends (0 if none): after the last '.com' of its run."""
    run = _URL_COM_RUN(text, pos)
    if run - pos <= _SHORT_RUN:
        m = _URL_COM_RE.match(text, pos)
        return m.end() if m else 0
    dots = _URL_COM_DOTS(text)
    i = bisect_left(dots, run) - 1
    return dots[i] + 4 if i >= 0 and dots[i] > pos else 0


def _www_host_ends_at(text: str, pos: int, end: int) -> bool:
    """Whether a www. host from ``pos`` can end at ``end``, given that the longest one ends at or after it."""
    for k in (2, 3, 4):
        dot = end - k - 1
        if dot > pos + 4 and text[dot] == "." and text[dot + 1:end].isascii() and text[dot + 1:end].isalpha():
            return True
    return False


def _likely_url(text: str, pos: int) -> _Match:
    """A URL without its scheme (www.x.org/..., x.com/...): the longest host, or a host then a path.
    (Python's first match may take the path's start as part of the host and miss the longer URL.)
    A host ends at or before the longest host's end, an x.com host before its first slash."""
    www = _URL_WWW_RE.match(text, pos)
    www_end = www.end() if www else 0
    com_end = _url_com_end(text, pos)
    best = max(www_end, com_end)
    if not best:
        return None
    slash = text.find("/", pos, best + 1)
    first = True
    while slash >= 0:
        if (slash <= www_end and _www_host_ends_at(text, pos, slash)) or (
                first and slash <= com_end and _URL_COM_RE.fullmatch(text, pos, slash)):
            m = _URL_PATH_RE.match(text, slash)               # the path runs as far from any slash of the run
            if m:
                best = max(best, m.end())
            break
        first = False
        slash = text.find("/", slash + 1, best + 1)
    return best, text[pos:best], best


_EMAIL_HEAD_RE, _EMAIL_DOMAIN_RE = re.compile(_EMAIL_HEAD), re.compile(_EMAIL_DOMAIN)
_NEXT_EMAIL_LOCAL_STOP = _NextFrom(_EMAIL_LOCAL_STOP)
_EMAIL_ATS = _starts(f"@(?={_EMAIL_DOMAIN_CHAR})")                  # an '@' a domain can follow


def _email(text: str, pos: int) -> _Match:
    """An e-mail address: its local part runs to the last '@' before a stop that a domain follows."""
    ats = _EMAIL_ATS(text)
    if not ats or ats[-1] < pos:
        return None
    head = _EMAIL_HEAD_RE.match(text, pos)
    if head is None:
        return None
    start, stop = head.end(), _NEXT_EMAIL_LOCAL_STOP(text, head.end())
    i = bisect_left(ats, stop) - 1
    if i < 0 or ats[i] < start:
        return None
    domain = _EMAIL_DOMAIN_RE.match(text, ats[i] + 1)
    assert domain is not None
    end = domain.end()
    return end, text[pos:end], end


# HTHING: its first part, [A-Za-z0-9][A-Za-z0-9.,\u00AD]*, holds no '-' and so runs to the end of its run.
_NEXT_NOT_HTHING_HEAD = _NextFrom("[^A-Za-z0-9.,\u00AD]")
_HTHING_TAILS = (re.compile(f"(?P<t>{_HTHING_TAIL}\\.)[,;:\\u3001]"), re.compile(f"(?P<t>{_HTHING_TAIL})"))


def _hthing(text: str, pos: int) -> _Match:
    """{HTHING} with a period before , ; : or \u3001 as trailing context, and {HTHING} (the longer; on a
    tie the first), after the head they share."""
    head_end = _NEXT_NOT_HTHING_HEAD(text, pos)
    if head_end >= len(text) or text[head_end] != "-":
        return None
    best = None
    for tail in _HTHING_TAILS:
        m = tail.match(text, head_end)
        if m is not None and (best is None or m.end() > best.end()):
            best = m
    if best is None:
        return None
    return best.end(), _unsoft(text[pos:best.end("t")]), best.end("t")


# WORD and THING hold no apostrophe or period: the rules that want one after them look where they end.
_WORD_RE, _REDAUX_RE, _THING_RE = re.compile(_WORD), re.compile(_REDAUX), re.compile(_THING)


def _word(text: str, pos: int) -> _Match:
    """{WORD}/{REDAUX} and {WORD}: the word, with 's 're 've 'll 'm 'd after it as trailing context."""
    m = _WORD_RE.match(text, pos)
    if m is None:
        return None
    end = m.end()
    aux = _REDAUX_RE.match(text, end)
    return (aux.end() if aux else end), _unsoft(text[pos:end]), end


def _thing(text: str, pos: int) -> _Match:
    """{THING} with a period before , ; : or \u3001 as trailing context, and {THING}."""
    m = _THING_RE.match(text, pos)
    if m is None:
        return None
    end = m.end()
    if text.startswith(".", end) and end + 1 < len(text) and text[end + 1] in ",;:\u3001":
        return end + 2, text[pos:end + 1], end + 1
    return end, text[pos:end], end


# A file name: LETDIG+(\.LETDIG+)*\.EXT before a space or [.?!,]. It ends at the last such extension of
# its run of dot-separated LETDIGs (from a position inside an entity such as &eacute; the run is another).
_FILENAME_RE = re.compile(f"(?P<t>{_LETDIG}+(?:\\.{_LETDIG}+)*\\.{_FILENAME_EXT})(?:{_SPNL}|[.?!,])")
_DOTTED_RUN = f"(?:{_LETDIG}+(?:\\.{_LETDIG}+)*)?"
_DOTTED_RUN_END, _DOTTED_RUN_RE = _RunEnd(_DOTTED_RUN), re.compile(_DOTTED_RUN)
_FILENAME_EXTS = _PerText(lambda text: [(m.start(), m.end()) for m in re.finditer(
    f"\\.{_FILENAME_EXT}(?={_SPNL}|[.?!,])", text)])
_SPLET_RE = re.compile(_SPLET)


def _filename(text: str, pos: int) -> _Match:
    amp = text.rfind("&", max(0, pos - 7), pos)                 # inside an entity?
    if amp >= 0 and (m := _SPLET_RE.match(text, amp)) is not None and m.end() > pos:
        dotted = _DOTTED_RUN_RE.match(text, pos)
        assert dotted is not None
        run = dotted.end()
    else:
        run = _DOTTED_RUN_END(text, pos)
    if run - pos <= _SHORT_RUN:
        m = _FILENAME_RE.match(text, pos)
        return (m.end(), text[pos:m.end("t")], m.end("t")) if m else None
    exts = _FILENAME_EXTS(text)
    i = bisect_right(exts, (run, len(text) + 1)) - 1
    while i >= 0 and exts[i][1] > run:
        i -= 1
    if i < 0 or exts[i][0] <= pos:
        return None
    end = exts[i][1]
    return end + 1, text[pos:end], end


_NEXT_NOT_LETTER = _NextFrom(f"[^{_L}]")
_NEXT_NOT_ABBREVIATION_LETTER = _NextFrom("[^A-Za-zİıſK\\-]")


def _abbreviation(*rules: Callable[[str, int], _Match]) -> Callable[[str, int], _Match]:
    """Consecutive rules for acronyms and abbreviations (the longest of them; on a tie the earlier one).
    Each has a period or a space after the ASCII letters and hyphens it starts with: when neither
    follows them, none can match."""
    best = _best_of(*rules)

    def match(text: str, pos: int) -> _Match:
        stop = _NEXT_NOT_ABBREVIATION_LETTER(text, pos)
        if stop < len(text) and (text[stop] == "." or _SPNL_RE.match(text, stop)):
            return best(text, pos)
        return None
    return match


def _apoword(text: str, pos: int) -> _Match:
    """APOWORD: each alternative has an apostrophe (or &apos;) after the letters it starts with, if any."""
    stop = _NEXT_NOT_LETTER(text, pos)
    if stop >= len(text) or text[stop] not in "'\x92\u2019`\x91\u2018\u201B&":
        return None
    return _APOWORD(text, pos)


def _apoword_parts() -> list:
    parts = [
        _APOS + _ci("n") + _APOS + "?", "[lLdDjJ]" + _APOS, _ci("dunkin") + _APOS, _ci("somethin") + _APOS,
        _ci("ol") + _APOS, _APOS + _ci("em"), f"[A-HJ-XZn]{_APOSETC}{_RL}{{2}}{_RL}*", _APOS + "[2-9]0" + _ci("s"),
        _APOS + _ci("til") + _ci("l") + "?", f"{_RL}{_RL}*[aeiouyAEIOUY]{_APOSETC}[aeiouA-Z]{_RL}*",
        _APOS + _ci("cause"), _ci("cont") + "'" + _ci("d") + r"\.?", "'" + _ci("twas"),
        _ci("nor") + "'" + _ci("easter"), _ci("c") + "'" + _ci("mon"), _ci("e") + "'" + _ci("er"),
        _ci("s") + "'" + _ci("mores"), _ci("ev") + "'" + _ci("ry"), _ci("li") + "'" + _ci("l"),
        _ci("nat") + "'" + _ci("l"), _ci("o") + _APOSETC + _ci("o"),
    ]
    return parts


_APOWORD = _longest_of(_apoword_parts())


_RULES: list = [
    # (characters a match can start with, matcher)
    ("[cC]", _rule(_ci("c") + r"\+\+")),
    ("[cCfF]", _rule("[cCfF]#")),
    ("[cC]", _rule(_ci("cannot"), back=3)),
    ("'", _rule("'" + _ci("twas"), back=3)),
    ("'", _rule("'" + _ci("tis"), back=2)),
    ("[gGlLwWİı]", _rule("(?:" + "|".join(_ci(w) for w in ("gonna", "gotta", "lemme", "gimme", "wanna")) + ")", back=2)),
    ("<", _sgml),
    ("[&\x96\x97\u2013\u2014\u2015]", _rule("&(?:" + _ci("MD") + "|" + _ci("mdash") + "|" + _ci("ndash")
                                              + ");|[\x96\x97\u2013\u2014\u2015]", lambda t: "--")),
    ("&", _rule("&" + _ci("amp") + ";", lambda t: "&")),
    ("&", _rule("&(?:" + "|".join(_ci(w) for w in ("HT", "TL", "UR", "LR", "QC", "QL", "QR", "odq", "cdq"))
                + "|#[0-9]+);")),
    (f"[{_L}{_LX}&]", _word),                                   # {WORD}/{REDAUX}, and {WORD} (after n't)
    ("[A-Za-z\u00AD]", _rule(f"(?P<t>[A-Za-z\\u00AD]*[A-MO-Za-mo-z]\\u00AD*){_SREDAUX}", _unsoft)),
    (f"[{_L}'\x92\u2019&]", _apoword),
    ("[yY]", _rule(f"(?P<t>{_ci('y')}{_APOS}){_RL}")),
    ("[hH]", _rule(_FULLURL)),
    ("[^ \t\n\f\r\"`'<>|.!?(){},\\-_$]|[wW]",
     _guard_before(_URL_MARK, _likely_url)),
    ("[&<a-zA-Z0-9]", _email),
    ("[@#]", _rule(f"@[a-zA-Z_][a-zA-Z_0-9]*|#{_LET}+")),
    ("['\x92\u2019&]", _rule(f"(?P<t>{_REDAUX})[^A-Za-z]", lambda t: _quotes(t, False))),
    ("[nN]", _rule(f"(?P<t>{_SREDAUX})[^A-Za-z]", lambda t: _quotes(t, False))),
    (f"[{_D}]", _rule(f"{_DIG}{{1,2}}[\\-/]{_DIG}{{1,2}}[\\-/]{_DIG}{{2,4}}")),
    (f"[{_D}\\-+.:,\u00AD\u066B\u066C]", _rule(_NUMBER, _unsoft)),
    ("[\u207A\u207B\u208A\u208B\u2070\u00B9\u00B2\u00B3\u2074-\u2079\u2080-\u2089]",
     _rule("[\u207A\u207B\u208A\u208B]?(?:[\u2070\u00B9\u00B2\u00B3\u2074-\u2079]+|[\u2080-\u2089]+)")),
    (f"[{_D}]", _rule(f"(?:{_DIG}{{1,4}}[- \\u00A0])?{_DIG}{{1,4}}(?:\\\\?/|\\u2044){_DIG}{{1,4}}",
                      lambda t: t.replace(" ", "\u00A0"))),
    ("[\u00BC\u00BD\u00BE\u2153-\u215E]", _rule("[\u00BC\u00BD\u00BE\u2153-\u215E]", lambda t: t.translate(_FRACTIONS))),
    ("[-cCpPaAsSſ]", _rule(
        "-(?:" + "|".join(_ci(w) for w in ("RRB", "LRB", "RCB", "LCB", "RSB", "LSB")) + ")-|" + _ci("C.D.s") + "|"
        + _ci("pro-") + "|" + _ci("anti-") + "|" + _ci("S") + "(?:&|&" + _ci("amp") + ";)" + _ci("P-500") + "|"
        + _ci("S") + "(?:&|&" + _ci("amp") + ";)" + _ci("Ls") + "|" + _ci("Cap") + _APOS + _ci("n") + "|"
        + _ci("c") + _APOS + _ci("est"), lambda t: _AMP.sub("&", t))),
    ("[A-Za-z0-9]", _rule(r"[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}")),
    ("[A-Z$#]", _rule(r"[A-Z]*\$|#")),
    ("[\u00A2\u00A3\u00A4\u00A5\u0080\u20A0\u20AC\u060B\u0E3F\u20A4\uFFE0\uFFE1\uFFE5\uFFE6]",
     _rule("[\u00A2\u00A3\u00A4\u00A5\u0080\u20A0\u20AC\u060B\u0E3F\u20A4\uFFE0\uFFE1\uFFE5\uFFE6]",
           lambda t: t.translate(_CURRENCY))),
    (_ASCII_LETTER_START, _abbreviation(
        _acronym,
        _rule(f"(?P<t>{_ABBREV3}){_SPNL}?{_DIG}"),
        _rule(f"(?P<t>{_PTY}){_SP}(?:{_ci('ltd')}|{_ci('lim')})"),
        _abbrev1,
        _rule(f"{_ABBREV4}\\."),
        _rule(f"(?P<t>{_ABBREV4}){_SP}"),
        _rule(f"(?P<t>{_ACRO}){_SPNL}"))),
    ("['\x92\u2019&]", _rule(f"(?P<t>{_APOS}[0-9][0-9]){_SPNL}")),
    (f"[{_L}{_LX}{_D}&]", _filename),
    (f"[{_L}{_LX}&]", _rule(f"(?P<t>{_WORD}\\.)[,;:\\u3001]", _unsoft)),
    ("[(+0-9]", _longest(_PHONE, r"[0-9()+.\- \u00A0]{0,24}", lambda t: _parens(t.replace(" ", "\u00A0")),
                          last="0123456789", needs="[0-9]{3}")),
    ('["&]', _rule('(?P<t>"|&' + _ci("quot") + ";)[A-Za-z0-9$]", lambda t: _quotes(t, True))),
    ('["&]', _rule('"|&' + _ci("quot") + ";", lambda t: _quotes(t, False))),
    ("\x7f", _skip("\x7f")),
    ("[<&]", _rule("<|&" + _ci("lt") + ";", lambda t: "<")),
    ("[>&]", _rule(">|&" + _ci("gt") + ";", lambda t: ">")),
    ("[<>:;=]", _rule(r"(?P<t>[<>]?[:;=][\-o*']?[()DPdpO\\{@|\[\]])[^A-Za-z0-9]", _parens)),
    (r"[\^xX=~<>'\-(]", _longest_of(_ASIANSMILEY.split("|"), _parens)),
    (r"[{}\[\]()]", _rule(r"[{}\[\]()]", _BRACKETS.__getitem__)),
    ("-", _rule("-+", lambda t: "--" if 3 <= len(t) <= 4 else t)),
    ("[.\x85\u2026]", _rule(r"\.{3,5}|(?:\.[ \u00A0]){2,4}\.|[\x85\u2026]", lambda t: "...")),
    ("[@#_]", _rule("@+|#+|_+")),
    (r"[*\\]", _rule(r"\*+|(?:\\\*){1,3}")),
    ("[,;:\u3001]", _rule("[,;:\u3001]")),
    ("[?!]", _rule("[?!]+")),
    ("[.\u00A1\u00BF\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002]",
     _rule("[.\u00A1\u00BF\u037E\u0589\u061F\u06D4\u0700-\u0702\u07FA\u3002]")),
    ("=", _rule("=")),
    ("/", _rule("/")),
    ("[A-Za-z0-9]", _hthing),                                   # {HTHING}\./[,;:] and {HTHING}
    (f"[{_L}{_D}]", _thing),                                    # {THING}\./[,;:] and {THING}
    ("[A-Z]", _rule(f"(?P<t>{_THINGA}\\.)[,;:\\u3001]", lambda t: _AMP.sub("&", t))),
    ("[A-Z]", _rule(_THINGA, lambda t: _AMP.sub("&", t))),
    ("'", _rule("(?P<t>')[A-Za-z][^ \t\n\r\u00A0]", lambda t: _quotes(t, True))),
    ("['\x92\u2019&]", _rule(_REDAUX, lambda t: _quotes(t, False))),
    ("[nN]", _rule(_SREDAUX, lambda t: _quotes(t, False))),
    ("['`\u2018\u2019\u201A\u201B\u201C\u201D\x91\x92\x93\x94\u201E\u201F\u2039\u203A\xAB\xBB&]",
     _rule(_QUOTES, lambda t: _quotes(t, False))),
    ("[<>]", _rule("<<|>>")),
    (_MISCSYMBOL, _rule(_MISCSYMBOL)),
    ("[\x00 \t\u00A0\u2000-\u200A\u3000\u200B\u200E\u200F\uFEFF]",
     _skip("\x00|[ \t\u00A0\u2000-\u200A\u3000]+|[\u200B\u200E\u200F\uFEFF]")),
    ("[\n\r\u2028\u2029\x0B\x0C\x85]", _skip("\r?\n|[\r\u2028\u2029\x0B\x0C\x85]")),
    ("&", _skip("&" + _ci("nbsp") + ";")),
]
_RULE_FIRSTS = [(re.compile(first), matcher) for first, matcher in _RULES]


@lru_cache(maxsize=None)
def _candidates(ch: str) -> tuple:
    """The rules a token starting with ``ch`` can match, in priority order."""
    return tuple(matcher for first, matcher in _RULE_FIRSTS if first.match(ch))


def _next_token(text: str, pos: int) -> tuple:
    """(token or None, next position): the longest match at ``pos``, or an untokenizable character dropped."""
    best = None
    for matcher in _candidates(text[pos]):
        found = matcher(text, pos)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    if best is None:
        return None, pos + 1
    return best[1], best[2]


# ---------------------------------------------------------------- fast path (the same tokens as the rules above)
# Runs of the commonest pieces, each of which the rules above lex on its own whatever follows:
# a word of letters (not cannot/gonna/...), hyphenated letters, letters and digits or a number, each
# before a space, the end, ) " or , ; : ! ? and a space; a word ending a sentence (not an
# abbreviation, which keeps its period); a word with 's 're 've 'll 'm 'd or n't; one letter and a
# period before a lower-case word; punctuation, quotes, brackets and dashes that are tokens of their own.
_SPLIT = "(?i:cannot|gonna|gotta|lemme|gimme|wanna)"
_ABBREV_WORD = f"(?:{_ABBREV1[:-2]}|{_ABBREV4}|{_ABBREV3[:-2]}|{_PTY[:-2]})"
_END = '(?=[ \n)"]|[,;:!?][ \n"])'
_FAST_RUN = re.compile(
    "(?:[ \t][ \t\u00A0\u2000-\u200A\u3000]*|\n"
    f"|(?!{_SPLIT}(?![A-Za-z]))[A-Za-z]+{_END}"
    f"|[A-Za-z]+(?:-[A-Za-z]+)+{_END}"
    f"|[A-Za-z]*[0-9][A-Za-z0-9]*(?=\n| [^0-9]|[)\"]|[,;:!?][ \n\"])"       # (its first digit: no backtracking)
    f"|[0-9]+(?:[.,:][0-9]+)+(?=\n| [^0-9]|[)\"]|[,;:!?][ \n\"])"
    f"|(?!{_SPLIT}\\.|{_ABBREV_WORD}\\.)[A-Za-z]{{2,}}\\.(?=\n| [^.]|[\")])"
    f"|(?:[A-Za-z]{{2,}}|I)'(?:s|re|ve|ll|m|d){_END}"
    f"|[A-Za-z]*[A-MO-Za-mo-z]n't{_END}"
    "|[A-Za-z]\\.(?=\n| [a-z0-9])"
    "|[,;:!?](?=[ \n\"])|[,!?](?=\\))|\\.(?=\n| [^.]|[\")])"
    "|\"|\\)|\\((?=[A-Za-wyzA-Z \"])|-{1,4}(?=[ \n]))+")
_FAST_TOKENS = re.compile("[A-Za-z]+?(?=n't)|n't|'(?:s|re|ve|ll|m|d)|[A-Za-z]\\.|[A-Za-z0-9]+(?:-[A-Za-z]+)*(?:[.,:][0-9]+)*"
                          "|[,;:!?.()\"-]")
_FAST_WORDS = re.compile(_FAST_TOKENS.pattern.replace(',;:!?.()"-', "()"))    # what pycocoevalcap keeps
_FAST_RAW = {"(": "-LRB-", ")": "-RRB-", '"': "''"}                  # as the lexer writes them


def _lex(text: str) -> list:
    """The lexer's tokens (before lower-casing) of one line that ends with a newline."""
    out = []
    pos, end = 0, len(text)
    run, tokens, raw = _FAST_RUN.match, _FAST_TOKENS.findall, _FAST_RAW
    while pos < end:
        m = run(text, pos)
        if m:
            out.extend([raw.get(t, t) for t in tokens(text, pos, m.end())])
            pos = m.end()
            if pos >= end:
                break
        tok, pos = _next_token(text, pos)
        if tok is not None:
            out.append(tok)
    return out


_LINE_BREAKS = re.compile("[\r\u2028\u2029\x0B\x0C]")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogates(ch: str) -> str:
    code = ord(ch) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


# Kana and the older CJK ideographs: Java's word iterator breaks around each of them.
_NOT_IN_JAVA_WORDS = re.compile("[\u3005\u3041-\u3094\u309D\u309E\u30A1-\u30FA\u30FC-\u30FE\u4E00-\u9FA5\uF900-\uFA2D]")
_WORD_JOINERS = frozenset("-_.'\"\u00AD\u2027\u058A\u2010\u2011\u2012\u2013\u2014\u2015")


def _java_cased(ch: str) -> bool:
    """Java's ConditionalSpecialCasing.isCased: Lu, Ll, Lt and a short list of Other_Lowercase/Uppercase."""
    code = ord(ch)
    return unicodedata.category(ch) in ("Lu", "Ll", "Lt") or any(
        lo <= code <= hi for lo, hi in ((0x2B0, 0x2B8), (0x2C0, 0x2C1), (0x2E0, 0x2E4), (0x345, 0x345),
                                        (0x37A, 0x37A), (0x1D2C, 0x1D61), (0x2160, 0x217F), (0x24B6, 0x24E9)))


def _java_lower(token: str) -> str:
    """Java's toLowerCase: a capital sigma is final (ς) when its BreakIterator word has a cased letter
    before it and none after it. Java's words run over letters, digits and marks, and across a dash,
    underscore, period or quote followed by a letter (Python's rule stops at the dash)."""
    if "\u03A3" not in token:
        return token.lower()
    word: list[int] = []
    current, n = 0, len(token)
    for i, ch in enumerate(token):
        inner = (ch.isalnum() or unicodedata.category(ch)[0] == "M" or unicodedata.category(ch) == "Cf") \
            and not _NOT_IN_JAVA_WORDS.match(ch)
        if not inner and ch in _WORD_JOINERS and i and word[i - 1] and token[i - 1].isalpha() \
                and i + 1 < n and token[i + 1].isalpha():
            inner = True
        if not inner:
            word.append(0)
        else:
            if not (i and word[i - 1]):
                current += 1
            word.append(current)
    cased = [_java_cased(ch) for ch in token]
    cased_before, cased_after = [False] * n, [False] * n      # a cased letter before / after it in its word
    for order, seen in ((range(n), cased_before), (range(n - 1, -1, -1), cased_after)):
        previous, any_cased = 0, False
        for i in order:
            if not word[i] or word[i] != previous:
                any_cased = False
            seen[i], previous = any_cased and bool(word[i]), word[i]
            any_cased = any_cased or cased[i]
    out = []
    for i, ch in enumerate(token):
        if ch != "\u03A3":
            out.append(ch.lower())
            continue
        out.append("\u03C2" if cased_before[i] and not cased_after[i] else "\u03C3")
    return "".join(out)


def _finish(tokens: list) -> str:
    """pycocoevalcap's post-processing of the jar's line: lower case, strip, split on ' ', drop punctuation."""
    line = " ".join(tokens)
    if _SURROGATE.search(line):                                # back from Java's UTF-16
        line = line.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    line = (" ".join(_java_lower(t) for t in line.split(" ")) if "\u03A3" in line else line.lower()).rstrip()
    return " ".join(w for w in line.split(" ") if w not in PUNCTUATIONS)


@lru_cache(maxsize=1 << 16)
def ptb_tokenize(caption: str) -> str:
    """The string pycocoevalcap's PTBTokenizer gives for this caption: its tokens, punctuation
    removed, joined by single spaces ("" when nothing remains). The caption is taken on its own line
    with another line after it; in a batch the jar lets the next line decide a few rare tokens."""
    text = (caption.replace("\n", " ") if "\n" in caption else caption) + "\n"
    m = _FAST_RUN.match(text)
    if m is not None and m.end() == len(text):                 # the common caption: one regex, one findall
        words = _FAST_WORDS.findall(text)
        if "(" in caption or ")" in caption:
            words = [_FAST_RAW.get(w, w) for w in words]
        return " ".join(words).lower()
    # pycocoevalcap replaces newlines by spaces; the jar would break the line at the other line
    # breaks too (and pair every later caption with the wrong image), so they count as spaces here.
    text = _LINE_BREAKS.sub(" ", caption.replace("\n", " "))
    if _ASTRAL.search(text):
        text = _ASTRAL.sub(lambda m: _surrogates(m.group()), text)
    return _finish(_lex(text + "\n"))


def ptb_tokenize_all(captions: Iterable[str]) -> list:
    """``ptb_tokenize`` of each caption, in order."""
    return [ptb_tokenize(c) for c in captions]
