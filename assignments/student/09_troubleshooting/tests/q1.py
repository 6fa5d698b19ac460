from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_cause_of(CAUSE_OF, CAUSES):
    assert ... not in CAUSE_OF.values(), 'CAUSE_OF still has ...: replace ... with letters'
    assert set(CAUSE_OF.values()) <= set(CAUSES), 'answer with the letters of CAUSES'

