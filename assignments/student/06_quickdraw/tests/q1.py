from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 3

@test_case(points=None, hidden=False)
def test_map_at_3(map_at_3):
    got = map_at_3(['cat', 'dog'], [['cat', 'dog', 'sun'], ['cat', 'sun', 'dog']])
    assert got is not None, 'map_at_3 returns None: replace ... with your code'
    assert abs(got - (1 + 1 / 3) / 2) < 1e-12, f'first right: 1, third right: 1/3; got {got}'

