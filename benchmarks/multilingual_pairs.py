"""The memories and questions of benchmarks/multilingual_retrieval.py, written for it (issue #33).

One row per fact: the fact as the write path stores it (English, third person, what the local model
writes even from a Dutch message), an English question, then for each of nl, de, fr, es the user's
own sentence (a turn in that language) and a question in that language. The questions ask for
the fact in other words where a person would (a pet, not "rabbit"; "my child", not "Ines").
"""
# ruff: noqa: E501 - one fact per block reads better than wrapped data

from __future__ import annotations

LANGS = ("nl", "de", "fr", "es")

# (en_fact, en_question, {lang: (memory, question)})
Row = tuple[str, str, dict[str, tuple[str, str]]]
ROWS: tuple[Row, ...] = (
    ("The user has a rabbit named Snuf", "What pet do I have?", {
        "nl": ("Ik heb een konijn dat Snuf heet.", "Welk huisdier heb ik?"),
        "de": ("Ich habe ein Kaninchen namens Snuf.", "Was für ein Haustier habe ich?"),
        "fr": ("J'ai un lapin qui s'appelle Snuf.", "Quel animal de compagnie ai-je ?"),
        "es": ("Tengo un conejo que se llama Snuf.", "¿Qué mascota tengo?")}),
    ("The user works as a nurse at the children's hospital", "What do I do for a living?", {
        "nl": ("Ik werk als verpleegkundige in het kinderziekenhuis.", "Wat voor werk doe ik?"),
        "de": ("Ich arbeite als Krankenpfleger im Kinderkrankenhaus.", "Was ist mein Beruf?"),
        "fr": ("Je travaille comme infirmier à l'hôpital pour enfants.", "Quel est mon métier ?"),
        "es": ("Trabajo de enfermero en el hospital infantil.", "¿En qué trabajo?")}),
    ("The user is allergic to peanuts", "Which food makes me ill?", {
        "nl": ("Ik ben allergisch voor pinda's.", "Van welk eten word ik ziek?"),
        "de": ("Ich bin allergisch gegen Erdnüsse.", "Welches Essen verträgt mein Körper nicht?"),
        "fr": ("Je suis allergique aux cacahuètes.", "Quel aliment dois-je éviter ?"),
        "es": ("Soy alérgico a los cacahuetes.", "¿Qué comida me sienta mal?")}),
    ("The user lives in Utrecht, near the old canal", "Where is my home?", {
        "nl": ("Ik woon in Utrecht, vlak bij de oude gracht.", "Waar is mijn huis?"),
        "de": ("Ich wohne in Utrecht, nahe dem alten Kanal.", "Wo bin ich zu Hause?"),
        "fr": ("J'habite à Utrecht, près du vieux canal.", "Où se trouve mon domicile ?"),
        "es": ("Vivo en Utrecht, cerca del canal antiguo.", "¿Dónde está mi casa?")}),
    ("The user's daughter Ines is 8 years old", "How old is my child?", {
        "nl": ("Mijn dochter Ines is 8 jaar.", "Hoe oud is mijn kind?"),
        "de": ("Meine Tochter Ines ist 8 Jahre alt.", "Wie alt ist mein Kind?"),
        "fr": ("Ma fille Ines a 8 ans.", "Quel âge a mon enfant ?"),
        "es": ("Mi hija Ines tiene 8 años.", "¿Cuántos años tiene mi niña?")}),
    ("The user plays the piano every evening", "Which instrument do I practise?", {
        "nl": ("Ik speel elke avond piano.", "Welk instrument bespeel ik?"),
        "de": ("Ich spiele jeden Abend Klavier.", "Welches Instrument spiele ich?"),
        "fr": ("Je joue du piano tous les soirs.", "De quel instrument est-ce que je joue ?"),
        "es": ("Toco el piano todas las noches.", "¿Qué instrumento toco?")}),
    ("The user does not eat meat", "What is my diet?", {
        "nl": ("Ik eet geen vlees.", "Wat is mijn dieet?"),
        "de": ("Ich esse kein Fleisch.", "Wie ernähre ich mich?"),
        "fr": ("Je ne mange pas de viande.", "Quel est mon régime alimentaire ?"),
        "es": ("No como carne.", "¿Cómo es mi dieta?")}),
    ("The user drives an old blue Volvo", "What car do I have?", {
        "nl": ("Ik rijd in een oude blauwe Volvo.", "Wat voor auto heb ik?"),
        "de": ("Ich fahre einen alten blauen Volvo.", "Was für ein Auto habe ich?"),
        "fr": ("Je conduis une vieille Volvo bleue.", "Quelle voiture ai-je ?"),
        "es": ("Conduzco un Volvo azul viejo.", "¿Qué coche tengo?")}),
    ("The user's brother Joris lives in Ghent", "Which city is Joris in?", {
        "nl": ("Mijn broer Joris woont in Gent.", "In welke stad woont Joris?"),
        "de": ("Mein Bruder Joris wohnt in Gent.", "Wo lebt Joris?"),
        "fr": ("Mon frère Joris habite à Gand.", "Dans quelle ville vit Joris ?"),
        "es": ("Mi hermano Joris vive en Gante.", "¿En qué ciudad vive Joris?")}),
    ("The user runs a marathon every spring", "What sport do I do?", {
        "nl": ("Ik loop elk voorjaar een marathon.", "Welke sport beoefen ik?"),
        "de": ("Ich laufe jeden Frühling einen Marathon.", "Welchen Sport treibe ich?"),
        "fr": ("Je cours un marathon chaque printemps.", "Quel sport est-ce que je pratique ?"),
        "es": ("Corro un maratón cada primavera.", "¿Qué deporte hago?")}),
    ("The user is afraid of flying", "Why do I avoid airplanes?", {
        "nl": ("Ik heb vliegangst.", "Waarom neem ik nooit het vliegtuig?"),
        "de": ("Ich habe Flugangst.", "Warum steige ich nie in ein Flugzeug?"),
        "fr": ("J'ai peur de prendre l'avion.", "Pourquoi est-ce que j'évite les vols ?"),
        "es": ("Me da miedo volar.", "¿Por qué evito los aviones?")}),
    ("The user drinks three cups of black coffee a day", "How much caffeine do I have daily?", {
        "nl": ("Ik drink drie koppen zwarte koffie per dag.", "Hoeveel cafeïne neem ik dagelijks?"),
        "de": ("Ich trinke drei Tassen schwarzen Kaffee am Tag.", "Wie viel Koffein nehme ich täglich zu mir?"),
        "fr": ("Je bois trois tasses de café noir par jour.", "Combien de caféine est-ce que je consomme chaque jour ?"),
        "es": ("Tomo tres tazas de café solo al día.", "¿Cuánta cafeína tomo a diario?")}),
    ("The user's birthday is on 14 May", "When do I celebrate getting older?", {
        "nl": ("Mijn verjaardag is op 14 mei.", "Wanneer ben ik jarig?"),
        "de": ("Mein Geburtstag ist am 14. Mai.", "Wann habe ich Geburtstag?"),
        "fr": ("Mon anniversaire est le 14 mai.", "Quelle est ma date de naissance ?"),
        "es": ("Mi cumpleaños es el 14 de mayo.", "¿Cuándo cumplo años?")}),
    ("The user is learning Japanese", "Which language am I studying?", {
        "nl": ("Ik leer Japans.", "Welke taal studeer ik?"),
        "de": ("Ich lerne Japanisch.", "Welche Fremdsprache übe ich gerade?"),
        "fr": ("J'apprends le japonais.", "Quelle langue est-ce que j'étudie ?"),
        "es": ("Estoy aprendiendo japonés.", "¿Qué idioma estudio?")}),
    ("The user has type 1 diabetes", "What illness do I have?", {
        "nl": ("Ik heb diabetes type 1.", "Welke ziekte heb ik?"),
        "de": ("Ich habe Typ-1-Diabetes.", "Welche Krankheit habe ich?"),
        "fr": ("J'ai un diabète de type 1.", "De quelle maladie est-ce que je souffre ?"),
        "es": ("Tengo diabetes tipo 1.", "¿Qué enfermedad tengo?")}),
    ("The user's husband Karim is a chef", "What does my partner do for work?", {
        "nl": ("Mijn man Karim is kok.", "Wat doet mijn partner voor werk?"),
        "de": ("Mein Mann Karim ist Koch.", "Was arbeitet mein Partner?"),
        "fr": ("Mon mari Karim est cuisinier.", "Quel est le travail de mon conjoint ?"),
        "es": ("Mi marido Karim es cocinero.", "¿A qué se dedica mi pareja?")}),
    ("The user grows tomatoes in the back garden", "What vegetables do I grow?", {
        "nl": ("Ik kweek tomaten in de achtertuin.", "Welke groenten verbouw ik?"),
        "de": ("Ich baue Tomaten im Garten hinter dem Haus an.", "Welches Gemüse ziehe ich selbst?"),
        "fr": ("Je fais pousser des tomates dans le jardin.", "Quels légumes est-ce que je cultive ?"),
        "es": ("Cultivo tomates en el jardín de atrás.", "¿Qué verduras cultivo?")}),
    ("The user hates getting up early", "Am I a morning person?", {
        "nl": ("Ik heb een hekel aan vroeg opstaan.", "Ben ik een ochtendmens?"),
        "de": ("Ich hasse es, früh aufzustehen.", "Bin ich ein Morgenmensch?"),
        "fr": ("Je déteste me lever tôt.", "Est-ce que je suis du matin ?"),
        "es": ("Odio madrugar.", "¿Soy una persona madrugadora?")}),
    ("The user's favourite band is Radiohead", "What music do I like best?", {
        "nl": ("Mijn favoriete band is Radiohead.", "Naar welke muziek luister ik het liefst?"),
        "de": ("Meine Lieblingsband ist Radiohead.", "Welche Musik höre ich am liebsten?"),
        "fr": ("Mon groupe préféré est Radiohead.", "Quelle musique est-ce que je préfère ?"),
        "es": ("Mi grupo favorito es Radiohead.", "¿Qué música me gusta más?")}),
    ("The user cycles to the office every day", "How do I commute?", {
        "nl": ("Ik fiets elke dag naar kantoor.", "Hoe ga ik naar mijn werk?"),
        "de": ("Ich fahre jeden Tag mit dem Rad ins Büro.", "Wie komme ich zur Arbeit?"),
        "fr": ("Je vais au bureau à vélo tous les jours.", "Comment est-ce que je me rends au travail ?"),
        "es": ("Voy a la oficina en bici todos los días.", "¿Cómo voy al trabajo?")}),
    ("The user's mother lives in a care home in Bonn", "Where is my mom staying?", {
        "nl": ("Mijn moeder woont in een verzorgingshuis in Bonn.", "Waar verblijft mijn mama?"),
        "de": ("Meine Mutter lebt in einem Pflegeheim in Bonn.", "Wo wohnt meine Mama?"),
        "fr": ("Ma mère vit dans une maison de retraite à Bonn.", "Où habite maman ?"),
        "es": ("Mi madre vive en una residencia en Bonn.", "¿Dónde vive mi mamá?")}),
    ("The user studied law at the University of Leiden", "What did I major in at college?", {
        "nl": ("Ik heb rechten gestudeerd in Leiden.", "Wat was mijn studie?"),
        "de": ("Ich habe in Leiden Jura studiert.", "Welches Fach habe ich an der Uni belegt?"),
        "fr": ("J'ai fait des études de droit à Leyde.", "Quelle matière ai-je étudiée à l'université ?"),
        "es": ("Estudié Derecho en Leiden.", "¿Qué carrera hice?")}),
    ("The user has a grey cat called Miso", "What's the name of my kitty?", {
        "nl": ("Ik heb een grijze kat die Miso heet.", "Hoe heet mijn poes?"),
        "de": ("Ich habe eine graue Katze namens Miso.", "Wie heißt meine Mieze?"),
        "fr": ("J'ai un chat gris qui s'appelle Miso.", "Comment s'appelle mon minou ?"),
        "es": ("Tengo una gata gris que se llama Miso.", "¿Cómo se llama mi minina?")}),
    ("The user is saving money to buy a house", "What am I putting money aside for?", {
        "nl": ("Ik spaar voor een eigen huis.", "Waarvoor leg ik geld opzij?"),
        "de": ("Ich spare auf ein eigenes Haus.", "Wofür lege ich Geld zurück?"),
        "fr": ("J'économise pour acheter une maison.", "Pour quoi est-ce que je mets de l'argent de côté ?"),
        "es": ("Estoy ahorrando para comprar una casa.", "¿Para qué guardo dinero?")}),
    ("The user has chronic back pain", "What part of my body hurts?", {
        "nl": ("Ik heb chronische rugpijn.", "Waar heb ik last van?"),
        "de": ("Ich habe chronische Rückenschmerzen.", "Wo tut es mir weh?"),
        "fr": ("J'ai des douleurs chroniques au dos.", "Où est-ce que j'ai mal ?"),
        "es": ("Tengo dolor de espalda crónico.", "¿Qué me duele?")}),
    ("The user volunteers at the food bank on Saturdays", "What do I do on weekends to help others?", {
        "nl": ("Ik doe op zaterdag vrijwilligerswerk bij de voedselbank.", "Hoe help ik anderen in het weekend?"),
        "de": ("Ich helfe samstags ehrenamtlich bei der Tafel.", "Wie engagiere ich mich am Wochenende?"),
        "fr": ("Je suis bénévole à la banque alimentaire le samedi.", "Comment est-ce que j'aide les autres le week-end ?"),
        "es": ("Hago voluntariado en el banco de alimentos los sábados.", "¿Cómo ayudo a otros los fines de semana?")}),
    ("The user loves horror films", "Which movies do I enjoy?", {
        "nl": ("Ik ben dol op horrorfilms.", "Van wat voor films houd ik?"),
        "de": ("Ich liebe Horrorfilme.", "Welche Filme schaue ich gern?"),
        "fr": ("J'adore les films d'horreur.", "Quel genre de films est-ce que j'aime ?"),
        "es": ("Me encantan las películas de terror.", "¿Qué cine me gusta?")}),
    ("The user's son Mateo plays football on Saturdays", "What sport does my boy play?", {
        "nl": ("Mijn zoon Mateo voetbalt op zaterdag.", "Welke sport doet mijn jongen?"),
        "de": ("Mein Sohn Mateo spielt samstags Fußball.", "Welchen Sport macht mein Junge?"),
        "fr": ("Mon fils Mateo joue au foot le samedi.", "Quel sport pratique mon garçon ?"),
        "es": ("Mi hijo Mateo juega al fútbol los sábados.", "¿Qué deporte practica mi chico?")}),
    ("The user's flat is on the fourth floor without a lift", "Do I have to climb stairs to get home?", {
        "nl": ("Mijn appartement is op de vierde verdieping, zonder lift.", "Moet ik trappen lopen om thuis te komen?"),
        "de": ("Meine Wohnung liegt im vierten Stock ohne Aufzug.", "Muss ich Treppen steigen, um nach Hause zu kommen?"),
        "fr": ("Mon appartement est au quatrième étage sans ascenseur.", "Est-ce que je dois monter des escaliers pour rentrer ?"),
        "es": ("Mi piso está en un cuarto sin ascensor.", "¿Tengo que subir escaleras para llegar a casa?")}),
    ("The user quit smoking two years ago", "Do I still use cigarettes?", {
        "nl": ("Ik ben twee jaar geleden gestopt met roken.", "Rook ik nog sigaretten?"),
        "de": ("Ich habe vor zwei Jahren mit dem Rauchen aufgehört.", "Rauche ich noch Zigaretten?"),
        "fr": ("J'ai arrêté de fumer il y a deux ans.", "Est-ce que je fume encore des cigarettes ?"),
        "es": ("Dejé de fumar hace dos años.", "¿Sigo fumando cigarrillos?")}),
    ("The user works from home on Tuesdays and Thursdays", "Which days am I not at the office?", {
        "nl": ("Ik werk op dinsdag en donderdag thuis.", "Op welke dagen ben ik niet op kantoor?"),
        "de": ("Dienstags und donnerstags arbeite ich von zu Hause.", "An welchen Tagen bin ich nicht im Büro?"),
        "fr": ("Je télétravaille le mardi et le jeudi.", "Quels jours est-ce que je ne suis pas au bureau ?"),
        "es": ("Teletrabajo los martes y los jueves.", "¿Qué días no voy a la oficina?")}),
    ("The user spends every summer holiday camping in Norway", "Where do I go on vacation?", {
        "nl": ("Elke zomervakantie ga ik kamperen in Noorwegen.", "Waar ga ik op vakantie?"),
        "de": ("Jeden Sommerurlaub gehe ich in Norwegen zelten.", "Wohin fahre ich in den Ferien?"),
        "fr": ("Chaque été, je pars camper en Norvège.", "Où est-ce que je pars en vacances ?"),
        "es": ("Cada verano voy de camping a Noruega.", "¿Adónde voy de vacaciones?")}),
)
