"""The task set, written here: small functions, each with unit tests as Python expressions.

A test is ``CALL == LITERAL`` or ``CALL is True|False|None``: the sandbox evaluates only the call
and returns the value's ``repr`` (built-in types only); the server compares it with the literal
(``coding_env.grading``), so nothing the submission does can change the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    id: str
    function: str
    prompt: str
    tests: tuple[str, ...]


def _t(id: str, function: str, prompt: str, *tests: str) -> Task:
    return Task(id, function, prompt, tests)


TASKS: tuple[Task, ...] = (
    _t(
        "add",
        "add",
        "add(a, b): return a + b.",
        "add(2, 3) == 5",
        "add(-1, 1) == 0",
        "add(0, 0) == 0",
    ),
    _t(
        "is_even",
        "is_even",
        "is_even(n): True if the integer n is even.",
        "is_even(4) is True",
        "is_even(7) is False",
        "is_even(0) is True",
        "is_even(-3) is False",
    ),
    _t(
        "reverse_string",
        "reverse_string",
        "reverse_string(s): s reversed.",
        "reverse_string('abc') == 'cba'",
        "reverse_string('') == ''",
        "reverse_string('a') == 'a'",
    ),
    _t(
        "factorial",
        "factorial",
        "factorial(n): n! for n >= 0.",
        "factorial(0) == 1",
        "factorial(5) == 120",
        "factorial(10) == 3628800",
    ),
    _t(
        "fibonacci",
        "fibonacci",
        "fibonacci(n): the n-th Fibonacci number, fibonacci(0) == 0, fibonacci(1) == 1.",
        "fibonacci(0) == 0",
        "fibonacci(1) == 1",
        "fibonacci(10) == 55",
        "fibonacci(30) == 832040",
    ),
    _t(
        "is_palindrome",
        "is_palindrome",
        "is_palindrome(s): True if s reads the same backwards, ignoring case and non-letters.",
        "is_palindrome('Racecar') is True",
        "is_palindrome('A man, a plan, a canal: Panama') is True",
        "is_palindrome('abc') is False",
    ),
    _t(
        "count_vowels",
        "count_vowels",
        "count_vowels(s): how many of a, e, i, o, u (any case) are in s.",
        "count_vowels('hello') == 2",
        "count_vowels('AEIOU') == 5",
        "count_vowels('xyz') == 0",
    ),
    _t(
        "max_of_list",
        "max_of_list",
        "max_of_list(xs): the largest element of a non-empty list.",
        "max_of_list([1, 5, 3]) == 5",
        "max_of_list([-2, -1]) == -1",
        "max_of_list([7]) == 7",
    ),
    _t(
        "sum_digits",
        "sum_digits",
        "sum_digits(n): the sum of the decimal digits of the integer n (sign ignored).",
        "sum_digits(123) == 6",
        "sum_digits(0) == 0",
        "sum_digits(-45) == 9",
    ),
    _t(
        "is_prime",
        "is_prime",
        "is_prime(n): True if n is a prime number.",
        "is_prime(2) is True",
        "is_prime(1) is False",
        "is_prime(97) is True",
        "is_prime(91) is False",
    ),
    _t(
        "gcd",
        "gcd",
        "gcd(a, b): the greatest common divisor of two non-negative integers.",
        "gcd(12, 18) == 6",
        "gcd(7, 5) == 1",
        "gcd(0, 9) == 9",
    ),
    _t(
        "flatten",
        "flatten",
        "flatten(xs): a flat list from a list of lists (one level).",
        "flatten([[1, 2], [3], []]) == [1, 2, 3]",
        "flatten([]) == []",
    ),
    _t(
        "unique_sorted",
        "unique_sorted",
        "unique_sorted(xs): the distinct elements of xs in ascending order.",
        "unique_sorted([3, 1, 3, 2]) == [1, 2, 3]",
        "unique_sorted([]) == []",
    ),
    _t(
        "word_count",
        "word_count",
        "word_count(s): a dict mapping each whitespace-separated word to its count.",
        "word_count('a b a') == {'a': 2, 'b': 1}",
        "word_count('') == {}",
    ),
    _t(
        "capitalize_words",
        "capitalize_words",
        "capitalize_words(s): every space-separated word with its first letter upper case.",
        "capitalize_words('hello world') == 'Hello World'",
        "capitalize_words('a') == 'A'",
    ),
    _t(
        "fizzbuzz",
        "fizzbuzz",
        "fizzbuzz(n): 'Fizz' for multiples of 3, 'Buzz' of 5, 'FizzBuzz' of both, else str(n).",
        "fizzbuzz(3) == 'Fizz'",
        "fizzbuzz(10) == 'Buzz'",
        "fizzbuzz(30) == 'FizzBuzz'",
        "fizzbuzz(7) == '7'",
    ),
    _t(
        "binary_search",
        "binary_search",
        "binary_search(xs, x): the index of x in the sorted list xs, or -1.",
        "binary_search([1, 3, 5, 7], 5) == 2",
        "binary_search([1, 3, 5, 7], 4) == -1",
        "binary_search([], 1) == -1",
    ),
    _t(
        "merge_sorted",
        "merge_sorted",
        "merge_sorted(a, b): one sorted list from two sorted lists.",
        "merge_sorted([1, 4], [2, 3]) == [1, 2, 3, 4]",
        "merge_sorted([], [1]) == [1]",
    ),
    _t(
        "rotate_list",
        "rotate_list",
        "rotate_list(xs, k): xs rotated right by k places.",
        "rotate_list([1, 2, 3, 4], 1) == [4, 1, 2, 3]",
        "rotate_list([1, 2, 3], 3) == [1, 2, 3]",
        "rotate_list([], 2) == []",
    ),
    _t(
        "celsius_to_fahrenheit",
        "celsius_to_fahrenheit",
        "celsius_to_fahrenheit(c): degrees Fahrenheit as a float.",
        "celsius_to_fahrenheit(0) == 32.0",
        "celsius_to_fahrenheit(100) == 212.0",
        "celsius_to_fahrenheit(-40) == -40.0",
    ),
    _t(
        "anagrams",
        "anagrams",
        "anagrams(a, b): True if a and b use the same letters the same number of times.",
        "anagrams('listen', 'silent') is True",
        "anagrams('ab', 'abb') is False",
    ),
    _t(
        "second_largest",
        "second_largest",
        "second_largest(xs): the second largest distinct value, or None if there is none.",
        "second_largest([3, 1, 4, 4]) == 3",
        "second_largest([5]) is None",
    ),
    _t(
        "run_length",
        "run_length",
        "run_length(s): run-length encoding, 'aaab' -> 'a3b1'.",
        "run_length('aaab') == 'a3b1'",
        "run_length('') == ''",
        "run_length('abc') == 'a1b1c1'",
    ),
    _t(
        "matrix_transpose",
        "matrix_transpose",
        "matrix_transpose(m): the transpose of a list of equal-length rows.",
        "matrix_transpose([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]",
        "matrix_transpose([[1, 2, 3]]) == [[1], [2], [3]]",
    ),
    _t(
        "count_words_longer",
        "count_words_longer",
        "count_words_longer(s, n): how many words of s are longer than n characters.",
        "count_words_longer('a bb ccc', 1) == 2",
        "count_words_longer('', 0) == 0",
    ),
    _t(
        "power_set_size",
        "power_set_size",
        "power_set_size(xs): the number of subsets of the set of elements of xs.",
        "power_set_size([1, 2, 3]) == 8",
        "power_set_size([1, 1]) == 2",
        "power_set_size([]) == 1",
    ),
    _t(
        "chunk",
        "chunk",
        "chunk(xs, n): xs split into lists of n items (the last may be shorter).",
        "chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]",
        "chunk([], 3) == []",
    ),
    _t(
        "roman",
        "roman",
        "roman(n): the Roman numeral of 1 <= n <= 3999.",
        "roman(4) == 'IV'",
        "roman(1994) == 'MCMXCIV'",
        "roman(3999) == 'MMMCMXCIX'",
    ),
    _t(
        "balanced",
        "balanced",
        "balanced(s): True if the brackets ()[]{} in s are balanced.",
        "balanced('([]{})') is True",
        "balanced('(]') is False",
        "balanced('((') is False",
        "balanced('') is True",
    ),
    _t(
        "dedupe_keep_order",
        "dedupe_keep_order",
        "dedupe_keep_order(xs): xs without repeats, first occurrences kept in order.",
        "dedupe_keep_order([3, 1, 3, 2, 1]) == [3, 1, 2]",
        "dedupe_keep_order([]) == []",
    ),
    _t(
        "triangle_kind",
        "triangle_kind",
        "triangle_kind(a, b, c): 'equilateral', 'isosceles', 'scalene' or 'invalid'.",
        "triangle_kind(2, 2, 2) == 'equilateral'",
        "triangle_kind(2, 2, 3) == 'isosceles'",
        "triangle_kind(3, 4, 5) == 'scalene'",
        "triangle_kind(1, 1, 5) == 'invalid'",
    ),
    _t(
        "digits_to_words",
        "digits_to_words",
        "digits_to_words(n): the digits of n >= 0 as English words joined by spaces, 12 -> 'one two'.",
        "digits_to_words(12) == 'one two'",
        "digits_to_words(0) == 'zero'",
    ),
)

TASKS_BY_ID: dict[str, Task] = {t.id: t for t in TASKS}
assert len(TASKS_BY_ID) == len(TASKS)
