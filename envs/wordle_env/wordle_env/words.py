"""The word list, written here: common five-letter English words (answers and allowed guesses)."""

from __future__ import annotations

_WORDS = """
about above actor adapt admit adopt after again agent agree ahead alarm album alert alike alive
allow alone along alter among anger angle angry apart apple apply arena argue arise array aside
asset audio avoid award aware badly baker basic beach began begin being below bench birth black
blade blame blank blind block blood board boost bound brain brand bread break breed brief bring
broad brown build built buyer cabin cable carry catch cause chain chair chart chase cheap check
chest chief child china chose civil claim class clean clear climb clock close cloud coach coast
could count court cover craft crane crash cream crime cross crowd crown curve cycle daily dance
dated dealt death delay depth doing doubt dozen draft drama drawn dream dress drink drive drove
dying eager early earth eight elite empty enemy enjoy enter entry equal error event every exact
exist extra faith false fault field fifth fifty fight final first fixed flash fleet floor fluid
focus force forth forty forum found frame frank fresh front fruit fully funny giant given glass
globe grace grade grand grant grass great green gross group grown guard guess guest guide happy
heart heavy hence horse hotel house human ideal image index inner input issue joint judge known
label large laser later laugh layer learn least leave legal level light limit local logic loose
lower lucky lunch major maker march match maybe mayor meant media metal might minor model money
month moral motor mount mouse mouth movie music needs never newly night noise north novel nurse
occur ocean offer often order other ought paint panel paper party peace phase phone photo piece
pilot pitch place plain plane plant plate point pound power press price pride prime print prior
prize proof proud prove queen quick quiet quite radio raise range rapid ratio reach ready refer
right rival river robot rough round route royal rural scale scene scope score sense serve seven
shall shape share sharp sheet shelf shell shift shirt shock shoot short shown sight since sixth
skill sleep slide small smart smile smoke solid solve sorry sound south space spare speak speed
spend spent split spoke sport staff stage stake stand start state steam steel stick still stock
stone stood store storm story strip stuck study stuff style sugar suite super sweet table taken
taste teach teeth thank theme there thick thing think third those three threw throw tight timer
title today topic total touch tough tower track trade train treat trend trial tried truck truly
trust truth twice under union unity until upper upset urban usage usual valid value video virus
visit vital voice waste watch water wheel where which while white whole whose woman women world
worry worth would wound write wrong wrote yield young youth
"""

WORDS: tuple[str, ...] = tuple(sorted(set(_WORDS.split())))
assert all(len(w) == 5 and w.isalpha() and w.islower() for w in WORDS)
