from otter.test_files import test_case

OK_FORMAT = False

name = "q4"
points = 2

@test_case(points=None, hidden=False)
def test_micro_batches_for(micro_batches_for):
    assert micro_batches_for(4, 0.5) is not None, 'returns None: replace ... with your code'
    assert micro_batches_for(4, 0.5) == 3, '4 stages: 3 micro-batches give 3/6 = 50 %'

