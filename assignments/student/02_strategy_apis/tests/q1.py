from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_strategy_for(STRATEGY_FOR):
    values = list(STRATEGY_FOR.values())
    assert ... not in values, 'STRATEGY_FOR still has ...: replace ... with class names'
    assert all([isinstance(v, str) and v.endswith('Strategy') for v in values]), 'class names'

