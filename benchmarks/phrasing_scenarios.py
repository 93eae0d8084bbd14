"""The scenarios of benchmarks/phrasing.py: what a user says, in their own words and language, and
what memory must hold afterwards (issue #33).

Each scenario: ``facts`` stored before it (text, key: the user's earlier facts, as the extraction
step writes them), optional ``before`` messages sent through the real chat first (what "forget that"
points back to), the message ``say``, and an answer key checked against the live facts afterwards.

The key never depends on the model's wording or language: it names names, numbers and proper
nouns. A *key* is ``+``-joined terms that must all appear in one live fact; a term is a regular
expression matched as a whole word on case- and accent-folded text (``a|b`` alternatives, a
trailing ``*`` for a prefix, a leading ``!`` for "and not this"). ``gone``: keys no live fact may
match (what was forgotten or replaced); every setup fact whose key is not in ``gone`` must stay
live. ``live``: more keys that must be matched. ``absent``: keys nothing may be stored for.
``owned``: (term, owner) - a live fact naming the term must name the owner too (another person's
fact stays theirs). Forget, plans, questions and requests also require that no fact was added.
"""
# ruff: noqa: E501 - one scenario per line reads better than wrapped data

from __future__ import annotations

from dataclasses import dataclass

CATEGORIES = ("forget", "correct", "update", "smalltalk", "compound", "others", "plans", "questions", "requests")
# No new fact may be live afterwards: these say nothing to remember (a forget that leaves "owes
# money to their brother" for "owes their brother 300 pounds" has kept what it was asked to drop).
STORE_NOTHING = frozenset({"forget", "plans", "questions", "requests"})


@dataclass(frozen=True)
class Scenario:
    name: str
    lang: str
    category: str
    facts: tuple[tuple[str, str], ...]
    say: str
    gone: tuple[str, ...] = ()
    live: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    owned: tuple[tuple[str, str], ...] = ()
    before: tuple[str, ...] = ()

    @property
    def store_nothing(self) -> bool:
        return self.category in STORE_NOTHING


def _s(name: str, category: str, facts: list[tuple[str, str]], say: str, *, gone: tuple[str, ...] = (),
       live: tuple[str, ...] = (), absent: tuple[str, ...] = (), owned: tuple[tuple[str, str], ...] = (),
       before: tuple[str, ...] = ()) -> Scenario:
    return Scenario(name, name.split("-", 1)[0], category, tuple(facts), say, gone, live, absent, owned, before)


SCENARIOS: tuple[Scenario, ...] = (
    # ---------------------------------------------------------------- English
    _s("en-forget-wish", "forget", [("The user works as a dentist", "dentist"), ("The user has a cat named Tiger", "tiger"), ("The user lives in Leeds", "leeds")],
       "Honestly, I'd rather you didn't keep anything about my cat.", gone=("tiger",)),
    _s("en-forget-question", "forget", [("The user goes to the FitZone gym in Harlow", "fitzone"), ("The user plays the cello", "cello"), ("The user's favourite band is Radiohead", "radiohead")],
       "Could you wipe whatever you know about my gym?", gone=("fitzone",)),
    _s("en-forget-passing", "forget", [("The user owes their brother 300 pounds", "300"), ("The user likes hiking", "hik*")],
       "That money I owe my brother is a bit private, so please don't hold on to it.", gone=("300",)),
    _s("en-forget-stop", "forget", [("The user lives in Norwich", "norwich")],
       "Actually, stop remembering that, it's nobody's business.", gone=("sertralin*",),
       before=("I take 20 mg of sertraline every morning.",)),
    _s("en-correct-age", "correct", [("The user's daughter Ines is 7 years old", "ines+7"), ("The user lives in Bristol", "bristol")],
       "Small correction: Ines turned 8 last week.", gone=("ines+7+!8",), live=("ines+8",)),
    _s("en-correct-count", "correct", [("The user has 6 chickens", "6+chicken*"), ("The user works as a plumber", "plumber")],
       "Oops, I got that wrong earlier: it's 7 chickens, not 6.", gone=("6+!7",), live=("7",)),
    _s("en-update-job", "update", [("The user works as a bookkeeper at Hartley & Sons", "hartley"), ("The user cycles to work", "cycl*")],
       "Big news: I handed in my notice at Hartley's and started at the Royal Mint on Monday!", gone=("hartley+!mint",), live=("mint",)),
    _s("en-update-moved", "update", [("The user lives in Cardiff", "cardiff"), ("The user's partner is called Sam", "sam")],
       "We finally did it, the boxes are unpacked and we're living in Swansea now.", gone=("cardiff+!swansea",), live=("swansea",)),
    _s("en-smalltalk-weather", "smalltalk", [("The user lives in York", "york")],
       "Wet and grey again here, typical November. Anyway, I finally got a puppy, a beagle called Biscuit!", live=("biscuit",)),
    _s("en-smalltalk-match", "smalltalk", [("The user is vegetarian", "vegetarian")],
       "Did you see the match last night? Crazy ending. Oh, and I'm taking a pottery class on Thursdays now.", live=("potter*",)),
    _s("en-compound-teacher", "compound", [("The user likes jazz", "jazz")],
       "I'm 38, I teach chemistry at a school in Derby and I have twin boys, Finn and Oscar.", live=("38", "chemistry", "derby", "finn", "oscar")),
    _s("en-compound-priya", "compound", [("The user likes jazz", "jazz")],
       "My name's Priya, I'm allergic to penicillin and I drive a Skoda.", live=("priya", "penicillin", "skoda")),
    _s("en-others-sister", "others", [("The user lives in Brighton", "brighton")],
       "My sister Lotte just moved to Porto for her new job.", owned=(("porto", "lotte"),)),
    _s("en-others-colleague", "others", [("The user is 41 years old", "41"), ("The user's son Pieter is 6 years old", "pieter+6")],
       "My colleague Dana turned 29 yesterday, we had cake at the office.", owned=(("29", "dana"),)),
    _s("en-plans-maybe", "plans", [("The user lives in Leicester", "leicester")],
       "Next year we might move to Lisbon, if the job works out.", absent=("lisbo*",)),
    _s("en-plans-if", "plans", [("The user works as a nurse", "nurse")],
       "If I were a lawyer I'd probably be rich by now.", absent=("lawyer",)),
    _s("en-questions-valencia", "questions", [("The user's daughter Ines is 7 years old", "ines+7")],
       "Is Valencia warm enough for swimming in April?", absent=("valencia",)),
    _s("en-requests-limerick", "requests", [("The user has a dog named Bo", "bo")],
       "Write me a limerick about a goat from Galway.", absent=("galway", "goat")),
    # ---------------------------------------------------------------- Dutch
    _s("nl-forget-wish", "forget", [("The user works at Rabobank", "rabobank"), ("The user has a rabbit named Snuf", "snuf"), ("The user lives in Zwolle", "zwolle")],
       "Ik heb liever dat je niks bijhoudt over mijn konijn.", gone=("snuf",)),
    _s("nl-forget-question", "forget", [("The user goes to the SportCity gym in Almere", "sportcity"), ("The user plays the trumpet", "trumpet|trompet")],
       "Kun je alles wissen wat je over mijn sportschool weet?", gone=("sportcity",)),
    _s("nl-forget-stop", "forget", [("The user earns 4200 euros a month", "4[.,]?200"), ("The user likes cycling", "cycl*|fiets*")],
       "Wil je ophouden met onthouden wat ik verdien?", gone=("4[.,]?200",)),
    _s("nl-forget-that", "forget", [("The user lives in Deventer", "deventer")],
       "Vergeet dat maar weer, dat gaat niemand wat aan.", gone=("metoprolol",),
       before=("Ik slik elke avond 50 mg metoprolol.",)),
    _s("nl-correct-age", "correct", [("The user's son Pieter is 6 years old", "pieter+6"), ("The user lives in Amersfoort", "amersfoort")],
       "Foutje van mij: Pieter is 5, niet 6.", gone=("pieter+6+!5",), live=("pieter+5",)),
    _s("nl-correct-name", "correct", [("The user's cat is called Mimi", "mimi"), ("The user works as a pharmacist", "pharmac*|apothe*")],
       "Ik zei eerder Mimi, maar onze kat heet eigenlijk Minoes.", gone=("mimi+!minoes",), live=("minoes",)),
    _s("nl-update-job", "update", [("The user works as a teacher at De Regenboog primary school", "regenboog"), ("The user plays korfball", "korfbal*")],
       "Raad eens: sinds maandag werk ik bij de bibliotheek van Haarlem!", gone=("regenboog+!haarlem",), live=("haarlem",)),
    _s("nl-update-car", "update", [("The user drives a Volkswagen Polo", "polo"), ("The user lives in Tilburg", "tilburg")],
       "De Polo is de deur uit, we rijden nu een Kia Niro.", gone=("polo+!niro",), live=("niro",)),
    _s("nl-smalltalk-baby", "smalltalk", [("The user lives in Groningen", "groningen")],
       "Wat een herfstweer vandaag, hè? Trouwens, mijn dochter Noor is gisteren geboren!", live=("noor",)),
    _s("nl-smalltalk-chess", "smalltalk", [("The user is vegetarian", "vegetar*")],
       "Haha, die grap was goed. O ja, ik ben sinds kort lid van schaakclub De Toren.", live=("toren",)),
    _s("nl-compound-utrecht", "compound", [("The user likes jazz", "jazz")],
       "Ik woon in Utrecht, vlak bij de Oudegracht, en ik werk als verpleegkundige in het UMC.", live=("utrecht", "umc|verpleeg*|nurse")),
    _s("nl-compound-breda", "compound", [("The user likes jazz", "jazz")],
       "Ik ben 52, heb drie kleinkinderen en speel elke zondag tennis in Breda.", live=("52", "3|three|drie", "tennis")),
    _s("nl-others-brother", "others", [("The user lives in Leiden", "leiden")],
       "Mijn broer Joris woont tegenwoordig in Gent.", owned=(("gent|ghent", "joris"),)),
    _s("nl-others-friend", "others", [("The user works as a baker", "baker|bakker")],
       "Mijn vriendin Sanne is net begonnen als piloot bij KLM.", owned=(("klm", "sanne"), ("pilot|piloot", "sanne"))),
    _s("nl-plans-canada", "plans", [("The user lives in Arnhem", "arnhem")],
       "Misschien gaan we volgend jaar naar Canada emigreren, we denken er nog over na.", absent=("canada",)),
    _s("nl-plans-lottery", "plans", [("The user works as an accountant", "accountant")],
       "Stel dat ik de loterij win, dan koop ik meteen een boot.", absent=("boot|boat", "loterij|lottery")),
    _s("nl-questions-cities", "questions", [("The user has a dog named Max", "max")],
       "Weet jij of Rotterdam groter is dan Den Haag?", absent=("rotterdam", "haag|hague")),
    _s("nl-requests-poem", "requests", [("The user lives in Nijmegen", "nijmegen")],
       "Schrijf een kort gedichtje over de zee bij Scheveningen.", absent=("scheveningen",)),
    # ---------------------------------------------------------------- German
    _s("de-forget-wish", "forget", [("The user works at Bosch", "bosch"), ("The user has a tortoise named Kurt", "kurt"), ("The user lives in Kassel", "kassel")],
       "Mir wäre lieber, du speicherst nichts über meine Schildkröte.", gone=("kurt",)),
    _s("de-forget-question", "forget", [("The user's doctor is Dr. Albers", "albers"), ("The user plays handball", "handball")],
       "Könntest du bitte vergessen, wer mein Arzt ist?", gone=("albers",)),
    _s("de-forget-passing", "forget", [("The user has debts of 8000 euros", "8[.,]?000"), ("The user likes chess", "chess|schach")],
       "Das mit meinen Schulden ist mir peinlich, also merk dir das bitte nicht.", gone=("8[.,]?000",)),
    _s("de-forget-that", "forget", [("The user lives in Jena", "jena")],
       "Vergiss das lieber wieder, das muss niemand wissen.", gone=("5[.,]?000",),
       before=("Meine Kreditkarte hat ein Limit von 5000 Euro.",)),
    _s("de-correct-age", "correct", [("The user's daughter Lena is 10 years old", "lena+10"), ("The user lives in Bonn", "bonn")],
       "Kleine Korrektur: Lena ist schon 11.", gone=("lena+10+!11",), live=("lena+11",)),
    _s("de-correct-birthday", "correct", [("The user's birthday is on 14 May", "14"), ("The user plays the flute", "flute|flote")],
       "Da habe ich mich vertan, mein Geburtstag ist am 4. Mai.", gone=("14+!4",), live=("4",)),
    _s("de-update-job", "update", [("The user works as a cook at Hotel Adler", "adler"), ("The user plays the guitar", "guitar|gitarre")],
       "Stell dir vor, ich habe beim Hotel Adler gekündigt und arbeite jetzt bei der Lufthansa!", gone=("adler+!lufthansa",), live=("lufthansa",)),
    _s("de-update-moved", "update", [("The user lives in Dresden", "dresden"), ("The user has a son named Paul", "paul")],
       "Seit dem Umzug letzten Monat wohnen wir jetzt in Leipzig.", gone=("dresden+!leipzig",), live=("leipzig",)),
    _s("de-smalltalk-cat", "smalltalk", [("The user lives in Kiel", "kiel")],
       "Puh, was für ein Tag, der Zug hatte wieder Verspätung. Übrigens habe ich jetzt einen Kater namens Moritz.", live=("moritz",)),
    _s("de-smalltalk-japanese", "smalltalk", [("The user is vegan", "vegan")],
       "Schönes Wochenende gehabt? Bei mir war's ruhig. Ach ja, ich lerne seit kurzem Japanisch.", live=("japan*",)),
    _s("de-compound-jonas", "compound", [("The user likes jazz", "jazz")],
       "Ich heiße Jonas, bin 33 und arbeite als Ingenieur bei Siemens in Erlangen.", live=("jonas", "33", "siemens")),
    _s("de-compound-pets", "compound", [("The user likes jazz", "jazz")],
       "Ich habe eine Katze namens Luna und einen Hund namens Bello und wohne in Freiburg.", live=("luna", "bello", "freiburg")),
    _s("de-others-brother", "others", [("The user lives in Mainz", "mainz")],
       "Mein Bruder Jonas wohnt jetzt in Graz.", owned=(("graz", "jonas"),)),
    _s("de-others-mother", "others", [("The user is 45 years old", "45")],
       "Meine Mutter Helga wird nächste Woche 70.", owned=(("70", "helga"),)),
    _s("de-plans-iceland", "plans", [("The user works as a librarian", "librar*|bibliothek*")],
       "Vielleicht fahren wir nächsten Sommer nach Island, mal sehen.", absent=("island|iceland",)),
    _s("de-plans-million", "plans", [("The user lives in Ulm", "ulm")],
       "Wenn ich Millionär wäre, würde ich ein Haus am Gardasee kaufen.", absent=("garda*", "million*")),
    _s("de-questions-train", "questions", [("The user has a daughter named Lena", "lena")],
       "Wie lange braucht man mit dem Zug von Hamburg nach Wien?", absent=("hamburg", "wien|vienna")),
    _s("de-requests-translate", "requests", [("The user works as a nurse", "nurse")],
       "Übersetze bitte 'Guten Appetit' ins Italienische.", absent=("appetit*", "italian*|italien*")),
    # ---------------------------------------------------------------- French
    _s("fr-forget-wish", "forget", [("The user works at Renault", "renault"), ("The user has a parrot named Coco", "coco"), ("The user lives in Nantes", "nantes")],
       "Je préférerais que tu ne gardes rien sur mon perroquet.", gone=("coco",)),
    _s("fr-forget-question", "forget", [("The user's bank is Crédit Agricole", "agricole"), ("The user plays the violin", "violin|violon")],
       "Tu pourrais effacer ce que tu sais sur ma banque ?", gone=("agricole",)),
    _s("fr-forget-stop", "forget", [("The user weighs 92 kg", "92"), ("The user likes gardening", "garden*|jardin*")],
       "Arrête de retenir mon poids, s'il te plaît.", gone=("92",)),
    _s("fr-forget-that", "forget", [("The user lives in Lille", "lille")],
       "Oublie ça, en fait, je préfère que ça reste privé.", gone=("psycholog*",),
       before=("J'ai rendez-vous chez le psychologue tous les mardis à 18h.",)),
    _s("fr-correct-age", "correct", [("The user's son Hugo is 9 years old", "hugo+9"), ("The user lives in Rennes", "rennes")],
       "Petite correction : Hugo a 10 ans, pas 9.", gone=("hugo+9+!10",), live=("hugo+10",)),
    _s("fr-correct-name", "correct", [("The user's wife is called Claire", "claire"), ("The user likes rugby", "rugby")],
       "Je me suis trompé tout à l'heure, ma femme s'appelle Claude, pas Claire.", gone=("claire+!claude",), live=("claude",)),
    _s("fr-update-job", "update", [("The user works as a waiter at Café Olympe", "olympe"), ("The user likes rugby", "rugby")],
       "Devine quoi : j'ai quitté le Café Olympe, je travaille maintenant chez Airbus !", gone=("olympe+!airbus",), live=("airbus",)),
    _s("fr-update-moved", "update", [("The user lives in Lyon", "lyon"), ("The user has a daughter named Chloé", "chloe")],
       "Ça y est, le déménagement est fini, on habite à Grenoble maintenant.", gone=("lyon+!grenoble",), live=("grenoble",)),
    _s("fr-smalltalk-dog", "smalltalk", [("The user lives in Toulouse", "toulouse")],
       "Il fait un temps magnifique aujourd'hui ! Au fait, j'ai adopté un chien, il s'appelle Filou.", live=("filou",)),
    _s("fr-smalltalk-salsa", "smalltalk", [("The user works at a bakery", "baker*|boulang*")],
       "Merci pour la recette d'hier, c'était délicieux. Sinon, je prends des cours de salsa le mercredi.", live=("salsa",)),
    _s("fr-compound-nurse", "compound", [("The user likes jazz", "jazz")],
       "J'ai 27 ans, je suis infirmière à Bordeaux et je joue du piano.", live=("27", "bordeaux", "piano")),
    _s("fr-compound-karim", "compound", [("The user likes jazz", "jazz")],
       "Mon mari s'appelle Karim, on a deux enfants et on vit à Marseille.", live=("karim", "marseille", "2|two|deux")),
    _s("fr-others-sister", "others", [("The user lives in Dijon", "dijon")],
       "Ma sœur Amélie vient de s'installer à Montréal.", owned=(("montreal", "amelie"),)),
    _s("fr-others-neighbour", "others", [("The user works as an architect", "architect*")],
       "Mon voisin Gérard est plombier depuis trente ans.", owned=(("plomb*|plumber", "gerard"),)),
    _s("fr-plans-japan", "plans", [("The user lives in Nice", "nice")],
       "On pense peut-être partir au Japon l'an prochain, rien n'est décidé.", absent=("japon|japan",)),
    _s("fr-plans-rich", "plans", [("The user works as a teacher", "teacher|professeur|enseign*")],
       "Si j'étais riche, j'achèterais une maison en Corse.", absent=("corse|corsica",)),
    _s("fr-questions-capital", "questions", [("The user has a cat named Minou", "minou")],
       "C'est quoi la capitale de l'Australie ?", absent=("australi*", "canberra")),
    _s("fr-requests-poem", "requests", [("The user lives in Brest", "brest")],
       "Écris-moi un petit poème sur la tour Eiffel.", absent=("eiffel",)),
    # ---------------------------------------------------------------- Spanish
    _s("es-forget-wish", "forget", [("The user works at Telefónica", "telefonica"), ("The user has a hamster named Pipo", "pipo"), ("The user lives in Seville", "sevill*")],
       "Prefiero que no guardes nada sobre mi hámster.", gone=("pipo",)),
    _s("es-forget-question", "forget", [("The user's therapist is Dr. Ortega", "ortega"), ("The user plays padel", "padel")],
       "¿Podrías borrar lo que sabes de mi terapeuta?", gone=("ortega",)),
    _s("es-forget-stop", "forget", [("The user earns 2300 euros a month", "2[.,]?300"), ("The user likes flamenco", "flamenco")],
       "Deja de recordar cuánto gano, por favor.", gone=("2[.,]?300",)),
    _s("es-forget-that", "forget", [("The user lives in Bilbao", "bilbao")],
       "Olvídalo, mejor que no lo sepa nadie.", gone=("12[.,]?000",),
       before=("Tengo una deuda de 12000 euros con el banco.",)),
    _s("es-correct-age", "correct", [("The user's daughter Lucía is 4 years old", "lucia+4"), ("The user lives in Zaragoza", "zaragoza")],
       "Me equivoqué antes: Lucía tiene 5 años, no 4.", gone=("lucia+4+!5",), live=("lucia+5",)),
    _s("es-correct-car", "correct", [("The user's car is a Seat Ibiza", "ibiza"), ("The user likes football", "football|futbol")],
       "Perdona, me expliqué mal: mi coche es un Seat León, no un Ibiza.", gone=("ibiza+!leon",), live=("leon",)),
    _s("es-update-job", "update", [("The user works as a cashier at Mercadona", "mercadona"), ("The user likes football", "football|futbol")],
       "¡Noticia! Desde el lunes trabajo en el Museo del Prado.", gone=("mercadona+!prado",), live=("prado",)),
    _s("es-update-moved", "update", [("The user lives in Valencia", "valencia"), ("The user has a son named Mateo", "mateo")],
       "Por fin nos mudamos: ahora vivimos en Málaga.", gone=("valencia+!malaga",), live=("malaga",)),
    _s("es-smalltalk-tortoise", "smalltalk", [("The user lives in Granada", "granada")],
       "¡Qué calor hace hoy! Por cierto, me acaban de regalar una tortuga que se llama Manolo.", live=("manolo",)),
    _s("es-smalltalk-german", "smalltalk", [("The user is vegetarian", "vegetarian*")],
       "Jaja, qué buen chiste. Bueno, te cuento que empecé a estudiar alemán en el Instituto Goethe.", live=("goethe|alem*|german*",)),
    _s("es-compound-carmen", "compound", [("The user likes jazz", "jazz")],
       "Me llamo Carmen, tengo 45 años y trabajo de farmacéutica en Toledo.", live=("carmen", "45", "toledo")),
    _s("es-compound-diego", "compound", [("The user likes jazz", "jazz")],
       "Vivo en Salamanca con mi novio Diego y nuestro perro Rayo.", live=("salamanca", "diego", "rayo")),
    _s("es-others-sister", "others", [("The user lives in Córdoba", "cordoba")],
       "Mi hermana Elena se ha mudado a Berlín.", owned=(("berlin", "elena"),)),
    _s("es-others-boss", "others", [("The user is 30 years old", "30")],
       "Mi jefe, Ramón, tiene 58 años y se jubila pronto.", owned=(("58", "ramon"),)),
    _s("es-plans-chile", "plans", [("The user lives in Murcia", "murcia")],
       "Quizás el año que viene nos vamos a vivir a Chile, todavía no sé.", absent=("chile",)),
    _s("es-plans-astronaut", "plans", [("The user works as a mechanic", "mechanic|mecanic*")],
       "Si fuera astronauta, me encantaría ir a Marte.", absent=("astronaut*", "marte|mars")),
    _s("es-questions-city", "questions", [("The user has a son named Mateo", "mateo")],
       "¿Cuántos habitantes tiene Buenos Aires?", absent=("buenos",)),
    _s("es-requests-books", "requests", [("The user lives in Oviedo", "oviedo")],
       "Hazme una lista de cinco libros de García Márquez.", absent=("garcia|marquez",)),
)

# What the user had said that each setup fact of a forget scenario was taken from, in the
# scenario's language, in the order of its ``facts``. The write path stores every fact it takes
# from a message with that message's turn, and a forget is also searched among those turns, in
# the user's own words (chat/named_facts.py). Written as a user would first say each fact, not to
# echo the forget request ("Ik sport bij SportCity", not "... de sportschool ..."). Stored in an
# earlier conversation before the scenario runs; ``--bare-setup`` leaves them out, as before.
SAID: dict[str, tuple[str, ...]] = {
    "en-forget-wish": ("I'm a dentist.", "I have a cat called Tiger.", "I live in Leeds."),
    "en-forget-question": ("I go to FitZone in Harlow to work out.", "I play the cello.", "Radiohead is my favourite band."),
    "en-forget-passing": ("I still owe my brother 300 pounds.", "I love hiking."),
    "en-forget-stop": ("I live in Norwich.",),
    "nl-forget-wish": ("Ik werk bij de Rabobank.", "Ik heb een konijn, hij heet Snuf.", "Ik woon in Zwolle."),
    "nl-forget-question": ("Ik sport bij SportCity in Almere.", "Ik speel trompet."),
    "nl-forget-stop": ("Ik verdien 4200 euro per maand.", "Ik fiets graag."),
    "nl-forget-that": ("Ik woon in Deventer.",),
    "de-forget-wish": ("Ich arbeite bei Bosch.", "Ich habe eine Schildkröte, sie heißt Kurt.", "Ich wohne in Kassel."),
    "de-forget-question": ("Mein Hausarzt ist Dr. Albers.", "Ich spiele Handball."),
    "de-forget-passing": ("Ich habe 8000 Euro Schulden.", "Ich spiele gern Schach."),
    "de-forget-that": ("Ich wohne in Jena.",),
    "fr-forget-wish": ("Je travaille chez Renault.", "J'ai un perroquet qui s'appelle Coco.", "J'habite à Nantes."),
    "fr-forget-question": ("Ma banque, c'est le Crédit Agricole.", "Je joue du violon."),
    "fr-forget-stop": ("Je pèse 92 kilos.", "J'adore jardiner."),
    "fr-forget-that": ("J'habite à Lille.",),
    "es-forget-wish": ("Trabajo en Telefónica.", "Tengo un hámster que se llama Pipo.", "Vivo en Sevilla."),
    "es-forget-question": ("Mi terapeuta es la doctora Ortega.", "Juego al pádel."),
    "es-forget-stop": ("Gano 2300 euros al mes.", "Me gusta el flamenco."),
    "es-forget-that": ("Vivo en Bilbao.",),
}
