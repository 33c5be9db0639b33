import { stemmer } from 'stemmer';

/**
 * Text processing for capability search: words out of names and prose, British spellings
 * folded to American ones, Porter stems, stop words dropped, and a small synonym table for
 * the vocabulary agents describe themselves with. Index and query go through the same steps,
 * so any folding here only has to be consistent, not linguistically perfect.
 */

const STOP_WORDS = new Set(
  (
    'a an and any are as at be been being but by can could do does for from get got had has have how i ' +
    'if in into is it its just let me might must my need needs of on or our please should so some ' +
    'something someone than that the their them then there these this those to too up us using use ' +
    'via want wants was we were what when where which who will with would you your yours agent agents ' +
    'capability capabilities thing things able given'
  ).split(' '),
);

/**
 * Groups of words that mean the same for routing purposes. Every member expands to every other
 * member (at a discount, see SYNONYM_QUALITY); members may be phrases' key words only.
 */
const SYNONYM_GROUPS: string[][] = [
  ['summarize', 'summary', 'condense', 'digest', 'recap', 'tldr', 'synopsis', 'gist', 'abstract', 'shorten', 'brief'],
  ['document', 'report', 'article', 'paper', 'doc', 'essay', 'memo', 'pdf'],
  ['translate', 'translation', 'translator', 'localize', 'localization'],
  ['language', 'languages', 'lingual', 'multilingual', 'spanish', 'french', 'german', 'english', 'chinese', 'japanese'],
  ['image', 'picture', 'photo', 'photograph', 'img', 'pic', 'pixel', 'screenshot'],
  ['video', 'clip', 'footage', 'movie', 'film'],
  ['audio', 'sound', 'recording', 'podcast'],
  ['speech', 'voice', 'spoken', 'speak', 'aloud', 'narrate', 'vocal'],
  ['transcribe', 'transcription', 'transcript', 'dictation', 'subtitle', 'caption'],
  ['search', 'find', 'lookup', 'retrieve', 'locate', 'seek'],
  ['email', 'mail', 'inbox', 'gmail'],
  ['send', 'deliver', 'dispatch'],
  ['schedule', 'calendar', 'appointment', 'meeting', 'book', 'booking'],
  ['code', 'program', 'source', 'software', 'script', 'function'],
  ['review', 'inspect', 'critique', 'audit', 'assess'],
  ['fix', 'repair', 'debug', 'patch', 'correct'],
  ['bug', 'defect', 'error', 'crash', 'failure', 'fault'],
  ['test', 'verify', 'validate', 'check'],
  ['classify', 'categorize', 'category', 'label', 'sort', 'bucket'],
  ['sentiment', 'emotion', 'mood', 'tone', 'opinion', 'feeling', 'positive', 'negative', 'happy', 'sad', 'angry', 'upset'],
  ['extract', 'parse', 'scrape', 'pull'],
  ['entity', 'entities', 'name', 'names', 'ner'],
  ['generate', 'create', 'produce', 'write', 'compose', 'draft', 'author'],
  ['chart', 'graph', 'plot', 'visualize', 'visualization', 'diagram', 'dashboard'],
  ['data', 'dataset', 'table', 'spreadsheet', 'csv', 'excel', 'rows'],
  ['sql', 'database', 'db'],
  ['weather', 'forecast', 'temperature', 'rain', 'climate'],
  ['convert', 'conversion', 'transform', 'format'],
  ['resize', 'scale', 'thumbnail', 'enlarge', 'crop', 'dimension'],
  ['compress', 'zip', 'shrink', 'minify'],
  ['pay', 'payment', 'charge', 'invoice', 'bill', 'billing', 'refund'],
  ['buy', 'purchase', 'order', 'checkout'],
  ['deploy', 'deployment', 'release', 'rollout', 'ship'],
  ['monitor', 'watch', 'observe', 'track', 'uptime'],
  ['alert', 'notify', 'notification', 'remind', 'reminder', 'page'],
  ['anomaly', 'outlier', 'unusual', 'abnormal', 'spike'],
  ['fraud', 'scam', 'suspicious'],
  ['recommend', 'recommendation', 'suggest', 'suggestion'],
  ['answer', 'respond', 'reply', 'response'],
  ['question', 'ask', 'faq', 'inquiry'],
  ['chat', 'conversation', 'talk', 'dialog', 'converse'],
  ['spell', 'spelling', 'grammar', 'typo', 'proofread'],
  ['detect', 'recognize', 'recognition', 'identify', 'spot', 'detection'],
  ['face', 'facial', 'person', 'people'],
  ['ocr', 'scan', 'scanned', 'handwriting'],
  ['route', 'directions', 'navigate', 'navigation', 'itinerary'],
  ['map', 'location', 'geocode', 'address', 'coordinates', 'gps'],
  ['stock', 'share', 'equity', 'ticker', 'market'],
  ['news', 'headline', 'headlines'],
  ['music', 'song', 'track', 'melody'],
  ['customer', 'client', 'user'],
  ['contract', 'agreement', 'legal', 'clause'],
  ['security', 'vulnerability', 'exploit', 'secure', 'cve'],
  ['backup', 'snapshot', 'archive'],
  ['log', 'logs', 'logging'],
  ['long', 'lengthy', 'large', 'big', 'huge'],
  ['short', 'small', 'tiny', 'concise'],
  ['key', 'main', 'important', 'essential', 'highlight', 'point'],
  ['price', 'cost', 'quote', 'pricing'],
  ['ticket', 'support', 'helpdesk'],
  ['cluster', 'group', 'grouping', 'segment'],
  ['keyword', 'keywords', 'tag', 'tags', 'topic', 'topics'],
  ['medical', 'health', 'clinical', 'patient', 'diagnosis'],
  ['resume', 'cv', 'candidate', 'applicant', 'hiring', 'recruit'],
  ['tweet', 'social', 'post', 'twitter'],
  ['web', 'website', 'page', 'url', 'html', 'site'],
];

/** How much a synonym match counts against a match of the word itself. */
export const SYNONYM_QUALITY = 0.8;

// British → American endings (summarise → summarize, colour → color, centre → center), so
// both spellings meet at the same stem.
const SPELLING: [RegExp, string][] = [
  [/isation(s?)$/, 'ization$1'],
  [/is(e|ed|es|ing|er|ers)$/, 'iz$1'],
  [/ys(e|ed|es|ing)$/, 'yz$1'],
  [/([a-z]{3,})our(s?)$/, '$1or$2'],
  [/([a-z]{3,})tre(s?)$/, '$1ter$2'],
  [/ogue(s?)$/, 'og$1'],
];

function fold(word: string): string {
  if (word.length < 5) return word;
  for (const [pattern, replacement] of SPELLING) {
    if (pattern.test(word)) return word.replace(pattern, replacement);
  }
  return word;
}

const stemCache = new Map<string, string>();

/** The index term for one lowercase word: spelling folded, then its Porter stem. */
export function stemWord(word: string): string {
  let stem = stemCache.get(word);
  if (stem === undefined) {
    stem = stemmer(fold(word));
    if (stemCache.size > 50_000) stemCache.clear();
    stemCache.set(word, stem);
  }
  return stem;
}

/** Raw words: camelCase and separators (`.`, `_`, `-`, punctuation) split, lowercased. */
export function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
}

export function isStopWord(word: string): boolean {
  return STOP_WORDS.has(word) || word.length < 2;
}

/** The index terms of a text: stems of its non-stop words, in order, repeats kept. */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const word of words(text)) if (!isStopWord(word)) out.push(stemWord(word));
  return out;
}

const synonymsByStem: Map<string, Set<string>> = (() => {
  const map = new Map<string, Set<string>>();
  for (const group of SYNONYM_GROUPS) {
    const stems = [...new Set(group.map(stemWord))];
    for (const stem of stems) {
      const set = map.get(stem) ?? new Set<string>();
      for (const other of stems) if (other !== stem) set.add(other);
      map.set(stem, set);
    }
  }
  return map;
})();

/** Stems meaning the same as this stem (excluding itself). */
export function synonymsOf(stem: string): string[] {
  return [...(synonymsByStem.get(stem) ?? [])];
}

/** One query word and what may stand for it in a document, each with a match quality. */
export interface QueryToken {
  word: string;
  stem: string;
  expansions: { term: string; quality: number }[];
}

/** Splits a query into tokens (stop words dropped, duplicates merged) with their expansions. */
export function queryTokens(query: string, maxTokens = 32): QueryToken[] {
  const seen = new Set<string>();
  const tokens: QueryToken[] = [];
  for (const word of words(query)) {
    if (isStopWord(word)) continue;
    const stem = stemWord(word);
    if (seen.has(stem)) continue;
    seen.add(stem);
    tokens.push({
      word,
      stem,
      expansions: [{ term: stem, quality: 1 }, ...synonymsOf(stem).map((term) => ({ term, quality: SYNONYM_QUALITY }))],
    });
    if (tokens.length >= maxTokens) break;
  }
  return tokens;
}
