// Runs once per pooled runtime, before any policy. It guards the built-ins that
// amplify memory or recurse natively, removes eval and every Function constructor,
// tames the override mistake for a few common names, then freezes every intrinsic
// reachable from globalThis and pins the global bindings. It returns the host's
// private tools. See doc.go and errors.go for the codes the guards produce.
(function (host) {
  'use strict';
  var G = globalThis;
  var nativeErrors = [TypeError, ReferenceError, RangeError, SyntaxError, URIError, EvalError];
  var MAXS = host.maxString, MAXA = host.maxArray, MAXN = host.maxNodes, MAXB = host.maxBytes, MAXD = host.maxDepth;
  var oom = host.oom, tooDeep = host.deep, hostParse = host.parse;
  var apply = Reflect.apply, construct = Reflect.construct;
  var defProp = Object.defineProperty, getDesc = Object.getOwnPropertyDescriptor;
  var getProto = Object.getPrototypeOf, ownKeys = Reflect.ownKeys, freeze = Object.freeze;
  var isArray = Array.isArray, OrigArray = Array, OrigMap = Map, OrigSet = Set;
  var preventExtensions = Object.preventExtensions, isFrozen = Object.isFrozen;
  var origStringify = JSON.stringify, origParse = JSON.parse;
  var mapGet = Map.prototype.get, mapSet = Map.prototype.set;
  var setHas = Set.prototype.has, setAdd = Set.prototype.add;
  var num = Number, str = String, floor = Math.floor;
  var MAXARGS = 65536; // arguments one call may spread or apply
  var MAXKEYS = 65536; // index keys of a string or typed array one step may list or copy
  var MAXSORT = 4096; // elements a sort without a comparator sorts in one native step
  var iterSym = Symbol.iterator;
  var TypedArray = getProto(Uint8Array), taProto = TypedArray.prototype;
  var taLength = getDesc(taProto, 'length').get, strValueOf = String.prototype.valueOf;
  var MAXSHIFT = 4294967296; // receiver length times items inserted by splice/unshift

  function lenOf(o) {
    if (o === null || o === undefined) return 0;
    var n = num(Object(o).length);
    return n > 0 ? n : 0;
  }
  // bounded returns an iterable that yields what x yields, refusing the step once it
  // has yielded more than max values: arrays, strings, Maps and Sets are measured
  // before; any other iterable (a native iterator above all: one spread, Array.from
  // or constructor would drain it in one native step) is drained by a generator, one
  // JS step per value, which the deadline can stop. A non-iterable is returned as it
  // is (the caller's TypeError, or an array-like measured by the caller).
  function bounded(x, max) {
    if (x === null || x === undefined) return x;
    if (typeof x === 'string') { if (x.length > max) oom(); return x; }
    if (typeof x !== 'object' && typeof x !== 'function') return x;
    if (isArray(x)) { if (x.length > max) oom(); return x; }
    if (x instanceof OrigMap || x instanceof OrigSet) { if (x.size > max) oom(); return x; }
    if (typeof x[iterSym] !== 'function') return x;
    var n = 0, src = x, out = {};
    out[iterSym] = function* () {
      for (var v of src) {
        if (++n > max) oom();
        yield v;
      }
    };
    return out;
  }
  // indexKeys is how many index keys listing o's own keys makes: a string's length (a
  // String object's too), a typed array's, else 0 (an object's keys were each made by
  // a step of their own).
  function indexKeys(o) {
    if (typeof o === 'string') return o.length;
    if (typeof o !== 'object' || o === null) return 0;
    try { return apply(taLength, o, []); } catch (e) { /* not a typed array */ }
    try { return apply(strValueOf, o, []).length; } catch (e) { /* not a String object */ }
    return 0;
  }
  function method(obj, name, make) {
    var orig = obj[name];
    defProp(obj, name, { value: make(orig), writable: true, enumerable: false, configurable: true });
  }

  // --- memory amplifiers -----------------------------------------------------------
  method(String.prototype, 'repeat', function (orig) {
    return function repeat(count) {
      var s = str(this), n = floor(num(count));
      if (n > 0 && s.length * n > MAXS) oom();
      return apply(orig, s, [count]);
    };
  });
  ['padStart', 'padEnd'].forEach(function (name) {
    method(String.prototype, name, function (orig) {
      return function (max, fill) {
        if (num(max) > MAXS) oom();
        return apply(orig, this, arguments);
      };
    });
  });
  // `+` and template literals cannot be hooked (the heap watchdog stops those);
  // concat is checked before it allocates
  method(String.prototype, 'concat', function (orig) {
    return function concat() {
      if (this === null || this === undefined) return apply(orig, this, arguments); // TypeError
      var s = str(this), n = s.length, parts = new OrigArray(arguments.length);
      for (var i = 0; i < arguments.length; i++) {
        parts[i] = str(arguments[i]);
        n += parts[i].length;
        if (n > MAXS) oom();
      }
      return apply(orig, s, parts);
    };
  });
  // replace, replaceAll and RegExp.prototype[Symbol.replace] are Go natives installed
  // before this script (replace.go); the walk below freezes them with the rest
  method(String.prototype, 'split', function (orig) {
    return function split(sep, limit) {
      var lim = limit === undefined ? MAXA + 1 : (num(limit) >>> 0);
      if (lim > MAXA + 1) lim = MAXA + 1;
      if (sep === '' && str(this).length > MAXA && lim > MAXA) oom(); // one element per unit
      var r = apply(orig, this, [sep, lim]);
      if (r.length > MAXA) oom();
      return r;
    };
  });
  // every Array.prototype method refuses a receiver longer than MAXA, which bounds the
  // native loops of fill, indexOf, slice, ... over huge sparse arrays
  ownKeys(Array.prototype).forEach(function (k) {
    if (typeof k !== 'string' || k === 'constructor' || k === 'length') return;
    var d = getDesc(Array.prototype, k);
    if (typeof d.value !== 'function') return;
    if (k === 'join') {
      method(Array.prototype, k, function (orig) {
        return function join(sep) {
          var o = Object(this), len = lenOf(o);
          if (len > MAXA) oom();
          var s = sep === undefined ? ',' : str(sep);
          var total = len > 0 ? (len - 1) * s.length : 0;
          if (total > MAXS) oom();
          var parts = new OrigArray(len);
          for (var i = 0; i < len; i++) {
            var e = o[i];
            parts[i] = e === undefined || e === null ? '' : str(e);
            total += parts[i].length;
            if (total > MAXS) oom();
          }
          return apply(orig, parts, [s]);
        };
      });
      return;
    }
    if (k === 'flat') {
      // the elements the result will hold are counted first (JS, interruptible)
      var countFlat = function (o, d, n) {
        var len = lenOf(o);
        if (len > MAXA) oom();
        for (var i = 0; i < len; i++) {
          var e = o[i];
          if (d > 0 && isArray(e)) n = countFlat(e, d - 1, n); else n++;
          if (n > MAXA) oom();
        }
        return n;
      };
      method(Array.prototype, k, function (orig) {
        return function flat(depth) {
          var d = depth === undefined ? 1 : num(depth);
          if (d > MAXD) d = MAXD;
          countFlat(Object(this), d, 0);
          return apply(orig, this, [d]);
        };
      });
      return;
    }
    if (k === 'flatMap') {
      method(Array.prototype, k, function (orig) {
        return function flatMap(fn, thisArg) {
          if (lenOf(this) > MAXA) oom();
          if (typeof fn !== 'function') return apply(orig, this, [fn, thisArg]); // TypeError
          var n = 0;
          return apply(orig, this, [function () {
            var r = apply(fn, this, arguments);
            n += isArray(r) ? r.length : 1;
            if (n > MAXA) oom();
            return r;
          }, thisArg]);
        };
      });
      return;
    }
    if (k === 'splice' || k === 'unshift') {
      // inserting shifts the receiver once per item on some arrays: bound the product
      method(Array.prototype, k, function (orig) {
        return function () {
          var len = lenOf(this), items = k === 'splice' ? arguments.length - 2 : arguments.length;
          if (items < 0) items = 0;
          if (len > MAXA || len + items > MAXA || (items > 1 && len * items > MAXSHIFT)) oom();
          return apply(orig, this, arguments);
        };
      });
      return;
    }
    if (k === 'sort' || k === 'toSorted') {
      method(Array.prototype, k, function (orig) {
        return function (cmp) {
          var len = lenOf(this);
          if (len > MAXA) oom();
          if (cmp === undefined && len > MAXSORT) return apply(orig, this, [defaultCompare]);
          return apply(orig, this, arguments);
        };
      });
      return;
    }
    if (k === 'concat') {
      method(Array.prototype, k, function (orig) {
        return function concat() {
          var n = lenOf(this);
          for (var i = 0; i < arguments.length; i++) {
            var a = arguments[i];
            n += (typeof a === 'object' && a !== null) ? lenOf(a) || 1 : 1;
            if (n > MAXA) oom();
          }
          if (n > MAXA) oom();
          return apply(orig, this, arguments);
        };
      });
      return;
    }
    method(Array.prototype, k, function (orig) {
      return function () {
        if (lenOf(this) > MAXA) oom();
        return apply(orig, this, arguments);
      };
    });
  });
  method(Array, 'from', function (orig) {
    return function from(items) {
      var args = [];
      for (var i = 0; i < arguments.length; i++) args[i] = arguments[i];
      if (items !== null && items !== undefined && typeof Object(items)[iterSym] === 'function') args[0] = bounded(items, MAXA);
      else if (lenOf(items) > MAXA) oom();
      return apply(orig, this, args);
    };
  });
  method(TypedArray, 'from', function (orig) {
    return function from(items) {
      var args = [];
      for (var i = 0; i < arguments.length; i++) args[i] = arguments[i];
      if (items !== null && items !== undefined && typeof Object(items)[iterSym] === 'function') args[0] = bounded(items, MAXA);
      return apply(orig, this, args); // an array-like: the constructor's own bound
    };
  });
  // iterables drained in one native step
  method(Object, 'fromEntries', function (orig) {
    return function fromEntries(it) { return apply(orig, Object, [bounded(it, MAXA)]); };
  });
  ['all', 'allSettled', 'any', 'race'].forEach(function (k) {
    if (typeof Promise[k] !== 'function') return;
    method(Promise, k, function (orig) {
      return function (it) { return apply(orig, this, [bounded(it, MAXA)]); };
    });
  });
  // listing or copying the index keys of a string or typed array is one native step
  // per call, with a key (and a value, an entry, a descriptor) made per index
  ['keys', 'values', 'entries', 'getOwnPropertyNames', 'getOwnPropertyDescriptors'].forEach(function (k) {
    method(Object, k, function (orig) {
      return function (o) {
        if (indexKeys(o) > MAXKEYS) oom();
        return apply(orig, Object, arguments);
      };
    });
  });
  method(Reflect, 'ownKeys', function (orig) {
    return function ownKeys_(o) {
      if (indexKeys(o) > MAXKEYS) oom();
      return apply(orig, Reflect, arguments);
    };
  });
  method(Object, 'assign', function (orig) {
    return function assign() {
      for (var i = 1; i < arguments.length; i++) if (indexKeys(arguments[i]) > MAXKEYS) oom();
      return apply(orig, Object, arguments);
    };
  });
  // a typed array's join writes up to its length times (the widest element + the
  // separator): checked before the step where that could pass MAXS, and where it
  // could, the text is measured first one element at a time (interruptible)
  function taJoinBound(o, sep, each) {
    var len = apply(taLength, o, []);
    var widest = o instanceof G.Float32Array || o instanceof G.Float64Array ? 24 : 11;
    if (len > 0 && len + (len - 1) * sep.length > MAXS) oom();
    if (len * (widest + sep.length) <= MAXS) return;
    var total = len > 0 ? (len - 1) * sep.length : 0;
    for (var i = 0; i < len; i++) {
      total += str(each(o[i])).length;
      if (total > MAXS) oom();
    }
  }
  method(taProto, 'join', function (orig) {
    return function join(sep) {
      taJoinBound(this, sep === undefined ? ',' : str(sep), function (e) { return e; });
      return apply(orig, this, arguments);
    };
  });
  method(taProto, 'toLocaleString', function (orig) {
    return function toLocaleString() {
      taJoinBound(this, ',', function (e) { return e.toLocaleString(); });
      return apply(orig, this, arguments);
    };
  });
  // a sort without a comparator is one native step (about 20 s for 2^20 elements
  // here): past MAXSORT elements it runs with a comparator of the same order, one JS
  // step per comparison, which the deadline can stop
  function defaultCompare(x, y) {
    var a = str(x), b = str(y);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  function numericCompare(x, y) {
    if (x !== x) return y !== y ? 0 : 1;
    if (y !== y) return -1;
    if (x < y) return -1;
    if (x > y) return 1;
    if (x === 0 && y === 0) return 1 / x < 0 ? (1 / y < 0 ? 0 : -1) : (1 / y < 0 ? 1 : 0);
    return 0;
  }
  ['sort', 'toSorted'].forEach(function (k) {
    if (typeof taProto[k] !== 'function') return;
    method(taProto, k, function (orig) {
      return function (cmp) {
        if (cmp === undefined && apply(taLength, this, []) > MAXSORT) return apply(orig, this, [numericCompare]);
        return apply(orig, this, arguments);
      };
    });
  });
  function checkArgs(args) {
    if (args !== null && args !== undefined && lenOf(args) > MAXARGS) oom();
  }
  method(Function.prototype, 'apply', function (orig) {
    return function apply_(thisArg, args) {
      checkArgs(args);
      return apply(orig, this, arguments);
    };
  });
  method(Reflect, 'apply', function (orig) {
    return function (f, t, args) { checkArgs(args); return apply(orig, Reflect, arguments); };
  });
  method(Reflect, 'construct', function (orig) {
    return function (f, args) { checkArgs(args); return apply(orig, Reflect, arguments); };
  });
  // constructors are replaced by plain wrapper functions sharing the original prototype
  // (instanceof, species and subclassing keep working); statics are copied over
  function guardCtor(name, check) {
    var C = G[name];
    var W = function () {
      var args = check(arguments) || arguments; // a check may hand on bounded arguments
      if (new.target === undefined) return apply(C, undefined, args);
      return construct(C, args, new.target === W ? C : new.target);
    };
    ownKeys(C).forEach(function (k) {
      if (k === 'prototype') return;
      defProp(W, k, getDesc(C, k));
    });
    defProp(W, 'prototype', { value: C.prototype, writable: false, enumerable: false, configurable: false });
    Object.setPrototypeOf(W, getProto(C));
    defProp(C.prototype, 'constructor', { value: W, writable: true, enumerable: false, configurable: true });
    defProp(G, name, { value: W, writable: true, enumerable: false, configurable: true });
  }
  guardCtor('Array', function (args) {
    if (args.length === 1 && typeof args[0] === 'number' && args[0] > MAXA) oom();
  });
  ['Set', 'Map', 'WeakSet', 'WeakMap'].forEach(function (name) {
    if (typeof G[name] !== 'function') return;
    guardCtor(name, function (args) {
      if (args.length === 0 || args[0] === undefined || args[0] === null) return;
      var a = [];
      for (var i = 0; i < args.length; i++) a[i] = args[i];
      a[0] = bounded(args[0], MAXA);
      return a;
    });
  });
  guardCtor('ArrayBuffer', function (args) {
    if (num(args[0]) > MAXB) oom();
  });
  ['Uint8Array', 'Uint8ClampedArray', 'Int8Array', 'Uint16Array', 'Int16Array', 'Uint32Array',
   'Int32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'].forEach(function (name) {
    if (typeof G[name] !== 'function') return;
    var size = G[name].BYTES_PER_ELEMENT;
    guardCtor(name, function (args) {
      var a = args[0];
      if (typeof a === 'object' && a !== null) {
        if (lenOf(a) > MAXA) oom();
        if (args.length > 2 && num(args[2]) * size > MAXB) oom();
        if (!(a instanceof G.ArrayBuffer) && typeof a[iterSym] === 'function') {
          var b = [];
          for (var i = 0; i < args.length; i++) b[i] = args[i];
          b[0] = bounded(a, MAXA);
          return b;
        }
      } else if (num(a) * size > MAXB) oom();
    });
  });


  // --- growth guards for `+`, `+=`, template literals and array spreads -------------
  // The compiler rewrites those into calls of these (gate/internal/policyast/growth.go): a string past MAXS
  // units is refused before it is built, an array literal past MAXA after (one step is
  // bounded by the spreads written in the source).
  function add(a, b) {
    var ta = typeof a, tb = typeof b;
    if (ta === 'string' && tb === 'string') {
      if (a.length + b.length > MAXS) oom();
      return a + b;
    }
    if (ta === 'number' && tb === 'number') return a + b;
    var r = a + b; // objects: ToPrimitive runs first; both sides are bounded strings at most
    if (typeof r === 'string' && r.length > MAXS) oom();
    return r;
  }
  function addAt(o, k, b) {
    if (o === null || o === undefined) throw new TypeError('Cannot read properties of ' + o);
    var key = typeof k === 'symbol' ? k : str(k);
    return (o[key] = add(o[key], b));
  }
  function tpl(q0) {
    var out = q0, n = q0.length;
    for (var i = 1; i < arguments.length; i += 2) {
      var e = arguments[i];
      if (typeof e === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
      var t = str(e), q = arguments[i + 1];
      n += t.length + q.length;
      if (n > MAXS) oom();
      out = out + t + q;
    }
    return out;
  }
  function arr(a) {
    if (a.length > MAXA) oom();
    return a;
  }
  // spreading is one native step: its source is bounded (bounded: arrays, strings,
  // Maps and Sets measured first, any other iterable drained one JS step per value)
  function spr(x) { return bounded(x, MAXA); }
  function sprArgs(x) { return bounded(x, MAXARGS); }
  // an object spread copies every own key in one native step: a string's or typed
  // array's index keys are measured first
  function ospr(x) {
    if (indexKeys(x) > MAXKEYS) oom();
    return x;
  }

  // the built-ins whose one native step multiplies a string by a bounded factor are
  // checked after it: every string a policy holds stays within MAXS, so one step can
  // reach at most that factor times MAXS before it is refused
  ['normalize', 'toUpperCase', 'toLowerCase', 'toLocaleUpperCase', 'toLocaleLowerCase'].forEach(function (name) {
    if (typeof String.prototype[name] !== 'function') return;
    method(String.prototype, name, function (orig) {
      return function () {
        var r = apply(orig, this, arguments);
        if (r.length > MAXS) oom();
        return r;
      };
    });
  });
  ['encodeURI', 'encodeURIComponent', 'escape'].forEach(function (name) {
    if (typeof G[name] !== 'function') return;
    method(G, name, function (orig) {
      return function (s) {
        var r = apply(orig, undefined, arguments);
        if (r.length > MAXS) oom();
        return r;
      };
    });
  });
  method(String, 'raw', function (orig) {
    return function raw(strings) {
      var n = 0, parts = Object(Object(strings).raw), len = lenOf(parts);
      if (len > MAXA) oom();
      for (var i = 0; i < len; i++) {
        n += str(parts[i]).length + (i + 1 < arguments.length ? str(arguments[i + 1]).length : 0);
        if (n > MAXS) oom();
      }
      return apply(orig, String, arguments);
    };
  });

  // --- native recursion ------------------------------------------------------------
  // JSON.stringify runs with a replacer that tracks each holder's depth, so it stops at
  // MAXD levels however the value was built (toJSON included) and counts nodes.
  function safeStringify(value, replacer, space, limit) {
    var max = typeof limit === 'number' && limit > MAXS ? limit : MAXS;
    var depth = new OrigMap(), nodes = 0, root = { '': value };
    var user = typeof replacer === 'function' ? replacer : null;
    var allow = null;
    if (isArray(replacer)) {
      allow = new OrigSet();
      for (var i = 0; i < replacer.length; i++) apply(setAdd, allow, [str(replacer[i])]);
    }
    apply(mapSet, depth, [root, 0]);
    var gap = typeof space === 'number' ? (space > 10 ? 10 : space) : typeof space === 'string' ? (space.length > 10 ? 10 : space.length) : 0;
    var size = 0;
    var tracker = function (k, v) {
      if (user !== null) v = apply(user, this, [k, v]);
      if (allow !== null && k !== '' && !isArray(this) && !apply(setHas, allow, [k])) return undefined;
      if (++nodes > MAXN) oom();
      // the text it will write: the key, the value if a string, and the indentation;
      // checked before the native step writes it
      size += k.length + 4 + gap * ((apply(mapGet, depth, [this]) || 0) + 1);
      if (typeof v === 'string') size += v.length + 2; // escapes may add up to 5 units more each: one bounded step
      if (size > max) oom();
      if (typeof v === 'object' && v !== null) {
        var d = (apply(mapGet, depth, [this]) || 0) + 1;
        if (d > MAXD) tooDeep();
        apply(mapSet, depth, [v, d]);
      }
      return v;
    };
    return apply(origStringify, JSON, [value, tracker, space]);
  }
  // JSON.parse is measured and, where it can be, built in Go before the native step
  // (lockdown.go boundedParse); undefined from the host means the original, bounded
  function safeParse(text, reviver) {
    var s = str(text), hasReviver = typeof reviver === 'function';
    var r = hostParse(s, hasReviver);
    if (r !== undefined) return r;
    return apply(origParse, JSON, hasReviver ? [s, reviver] : [s]);
  }
  defProp(JSON, 'stringify', { value: function stringify(v, r, s) { return safeStringify(v, r, s); }, writable: true, configurable: true });
  defProp(JSON, 'parse', { value: function parse(t, r) { return apply(safeParse, undefined, arguments); }, writable: true, configurable: true });

  // --- no code generation ----------------------------------------------------------
  var noCodegen = function Function() { throw new TypeError('code generation is disabled in policies'); };
  var fnProtos = [Function.prototype, getProto(function* () {})];
  try { fnProtos.push(getProto(async function () {})); } catch (e) { /* no async support */ }
  fnProtos.forEach(function (p) {
    defProp(p, 'constructor', { value: noCodegen, writable: false, enumerable: false, configurable: false });
  });
  defProp(noCodegen, 'prototype', { value: Function.prototype, writable: false, enumerable: false, configurable: false });
  defProp(G, 'Function', { value: noCodegen, writable: true, enumerable: false, configurable: true });
  delete G.eval;
  delete G.GoError;
  // --- no BigInt: `x = x * x` on one doubles its size in one native step; BigInt
  // literals are refused at compile time and every other source is removed here
  delete G.BigInt;
  delete G.BigInt64Array;
  delete G.BigUint64Array;
  if (typeof DataView === 'function') {
    ['getBigInt64', 'getBigUint64', 'setBigInt64', 'setBigUint64'].forEach(function (k) { delete DataView.prototype[k]; });
  }

  // --- globalThis stays extensible for sloppy implicit globals (removed after each
  // policy by the host); defining hidden ones or swapping its prototype is refused.
  function noGlobal(o) { if (o === G) throw new TypeError('policies cannot redefine globals'); }
  ['defineProperty', 'defineProperties', 'setPrototypeOf'].forEach(function (k) {
    method(Object, k, function (orig) {
      return function (o) { noGlobal(o); return apply(orig, Object, arguments); };
    });
  });
  ['defineProperty', 'setPrototypeOf', 'preventExtensions'].forEach(function (k) {
    method(Reflect, k, function (orig) {
      return function (o) { noGlobal(o); return apply(orig, Reflect, arguments); };
    });
  });
  ['preventExtensions', 'seal', 'freeze'].forEach(function (k) {
    method(Object, k, function (orig) {
      return function (o) { if (o === G) return o; return apply(orig, Object, arguments); };
    });
  });
  var protoDesc = getDesc(Object.prototype, '__proto__');
  if (protoDesc && protoDesc.set) {
    var protoSet = protoDesc.set;
    defProp(Object.prototype, '__proto__', {
      get: protoDesc.get,
      set: function (p) { noGlobal(this); return apply(protoSet, this, [p]); },
      enumerable: false, configurable: true
    });
  }

  // --- override mistake: after freezing, `obj.toString = f` or `this.name = 'X'` in an
  // Error subclass would fail; these accessors define an own property instead.
  var tamedGetters = new OrigSet();
  function tame(obj, key) {
    var d = getDesc(obj, key);
    if (!d || !('value' in d)) return;
    var value = d.value;
    var get = function () { return value; };
    apply(setAdd, tamedGetters, [get]);
    defProp(obj, key, {
      get: get,
      set: function (v) {
        if (this === obj) throw new TypeError('Cannot assign to read only property \'' + str(key) + '\'');
        defProp(this, key, { value: v, writable: true, enumerable: true, configurable: true });
      },
      enumerable: d.enumerable, configurable: false
    });
  }
  ['toString', 'valueOf', 'constructor', 'hasOwnProperty', 'toLocaleString'].forEach(function (k) { tame(Object.prototype, k); });
  ['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError', 'AggregateError'].forEach(function (n) {
    if (typeof G[n] !== 'function') return;
    ['name', 'message', 'constructor', 'toString'].forEach(function (k) { tame(G[n].prototype, k); });
  });

  // --- describe a thrown value without running its toString ------------------------
  function dataProp(o, k) {
    for (var i = 0; o !== null && o !== undefined && i < 64; i++) {
      var d = getDesc(o, k);
      if (d !== undefined) {
        if ('value' in d) return d.value;
        if (apply(setHas, tamedGetters, [d.get])) return apply(d.get, o, []);
        return undefined;
      }
      o = getProto(o);
    }
    return undefined;
  }
  function describe(e) {
    var t = typeof e;
    if (t === 'string') return e;
    if (t === 'symbol') return 'Symbol()';
    if (e === null || (t !== 'object' && t !== 'function')) return str(e);
    var msg = dataProp(e, 'message'), name = dataProp(e, 'name');
    if (typeof name !== 'string') name = '';
    if (typeof msg === 'string') {
      if (name === '' || name === 'Error') return msg === '' ? 'Error' : msg;
      return msg === '' ? name : name + ': ' + msg;
    }
    return 'policy threw a non-error value';
  }
  // the native error class of a thrown value ('' for a deliberate throw), for the
  // operator's log line; traps and getters it may run run under the policy's deadline
  function errorClass(e) {
    if (typeof e !== 'object' || e === null) return '';
    try {
      for (var i = 0; i < nativeErrors.length; i++) {
        if (e instanceof nativeErrors[i]) return nativeErrors[i].prototype.name;
      }
    } catch (x) { /* a Proxy's trap threw: not a native error */ }
    return '';
  }
  // explain describes a thrown value for the host: [message, native error class or '',
  // stack text of a native error or ''].
  var explain = function (e) {
    var cls = errorClass(e), st = cls === '' ? undefined : dataProp(e, 'stack');
    return [describe(e), cls, typeof st === 'string' ? st : ''];
  };
  // bind runs a compiled wrapper once and returns the policy function it closes over
  // ctx and the growth guards; the host calls that function for each run.
  var bind = function (wrapper, ctx) {
    return wrapper(ctx, add, addAt, tpl, arr, spr, sprArgs, ospr);
  };
  // runner binds a wrapper and runs its function once: undefined, or explain's array.
  var runner = function (wrapper, ctx) {
    try { bind(wrapper, ctx)(); return undefined; } catch (e) { return explain(e); }
  };

  // deepFreeze freezes v and everything reachable from it: functions too, accessor
  // functions, and prototypes. It stops at what is frozen already (the intrinsics).
  function deepFreeze(v) {
    var stack = [v];
    while (stack.length > 0) {
      var o = stack.pop();
      if ((typeof o !== 'object' && typeof o !== 'function') || o === null || isFrozen(o)) continue;
      freeze(o);
      stack.push(getProto(o));
      var ks = ownKeys(o);
      for (var i = 0; i < ks.length; i++) {
        var d = getDesc(o, ks[i]);
        if ('value' in d) stack.push(d.value); else { stack.push(d.get); stack.push(d.set); }
      }
    }
    return v;
  }

  // entries lists a redaction helper's argument without running a getter: its elements
  // (an array) or [k0, v0, k1, v1, ...] of its own enumerable data properties (an
  // object). Accessors, holes and symbol keys are TypeErrors. The host refuses Proxies
  // before calling it.
  function entries(o) {
    var out = [], i, d;
    if (isArray(o)) {
      var n = getDesc(o, 'length').value;
      if (n > MAXN) oom();
      for (i = 0; i < n; i++) {
        d = getDesc(o, i);
        if (d === undefined) throw new TypeError('the redaction helpers take no arrays with holes');
        if (!('value' in d)) throw new TypeError('the redaction helpers take no getters or setters');
        out[i] = d.value;
      }
      return out;
    }
    var ks = ownKeys(o);
    for (i = 0; i < ks.length; i++) {
      if (typeof ks[i] === 'symbol') throw new TypeError('the redaction helpers take no symbol keys');
      d = getDesc(o, ks[i]);
      if (!('value' in d)) throw new TypeError('the redaction helpers take no getters or setters');
      if (d.enumerable) { out[out.length] = ks[i]; out[out.length] = d.value; }
    }
    return out;
  }

  // --- freeze every intrinsic; pin the global bindings -------------------------------
  var roots = [];
  ownKeys(G).forEach(function (k) {
    var d = getDesc(G, k);
    if ('value' in d) roots.push(d.value); else { roots.push(d.get); roots.push(d.set); }
  });
  [function () { return getProto(function* () {}); },
   function () { return [][Symbol.iterator](); },
   function () { return new OrigMap().entries(); },
   function () { return new OrigSet().values(); },
   function () { return ''[Symbol.iterator](); },
   function () { return /x/g[Symbol.matchAll](''); },
   function () { return (function* () {})(); },
   function () { return getProto(async function () {}); },
   function () { return (async function () {})(); }
  ].forEach(function (f) { try { roots.push(f()); } catch (e) { /* not supported */ } });
  var seen = new OrigSet(), work = roots;
  while (work.length > 0) {
    var o = work.pop();
    if ((typeof o !== 'object' && typeof o !== 'function') || o === null || o === G) continue;
    if (apply(setHas, seen, [o])) continue;
    apply(setAdd, seen, [o]);
    freeze(o);
    work.push(getProto(o));
    var ks = ownKeys(o);
    for (var i = 0; i < ks.length; i++) {
      var d = getDesc(o, ks[i]);
      if ('value' in d) work.push(d.value); else { work.push(d.get); work.push(d.set); }
    }
  }
  ownKeys(G).forEach(function (k) {
    var d = getDesc(G, k);
    if ('value' in d) defProp(G, k, { writable: false, configurable: false });
    else defProp(G, k, { configurable: false });
  });

  return freeze({
    runner: runner, bind: bind, explain: explain, describe: describe, stringify: safeStringify, parse: safeParse, deepFreeze: deepFreeze,
    preventExtensions: preventExtensions, freeze: freeze, entries: entries
  });
})
